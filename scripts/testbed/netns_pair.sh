# Sourced by the testbed scripts: two network namespaces joined by a veth pair.
#   make_netns_pair NS_A NS_B VETH_A VETH_B ADDR_A/24 ADDR_B/24
# Creates both namespaces (NS_A first: callers test `ip netns add` for permission themselves),
# moves one end of the veth into each, assigns the addresses and brings everything up.
make_netns_pair() {
  local ns_a=$1 ns_b=$2 veth_a=$3 veth_b=$4 addr_a=$5 addr_b=$6 ns
  ip netns add "$ns_b"
  ip link add "$veth_a" type veth peer name "$veth_b"
  ip link set "$veth_a" netns "$ns_a"
  ip link set "$veth_b" netns "$ns_b"
  ip -n "$ns_a" addr add "$addr_a" dev "$veth_a"
  ip -n "$ns_b" addr add "$addr_b" dev "$veth_b"
  for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
  ip -n "$ns_a" link set "$veth_a" up
  ip -n "$ns_b" link set "$veth_b" up
}
