#!/usr/bin/env bash
# Two "hosts" on one machine: network namespaces joined by a veth pair, optionally rate-limited
# with `tc tbf`. Runs CMD once per host as rank 0 / rank 1 of a 2-rank world (LOOM_RANK,
# LOOM_WORLD_SIZE, LOOM_STORE on a directory both see, LOOM_HOST_ADDR = that host's address), with
# output prefixed by host, and removes everything it created on exit.
#
#   scripts/testbed/netns_2host.sh [--rate 1gbit] -- build/src/loom/cli/loom train steps=5
#   scripts/testbed/netns_2host.sh --rate 1gbit -- build/src/loom/cli/loom bench collectives --mpi off
#
# Needs root (or CAP_NET_ADMIN) and iproute2. Exit status: 77 when namespaces are unavailable,
# otherwise non-zero if either host's command failed. Traffic stays inside the two namespaces.
source "$(dirname "$0")/netns_pair.sh"
set -euo pipefail

rate=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--rate RATE] -- CMD ARGS..." >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--rate RATE] -- CMD ARGS..." >&2; exit 2; }

id=$$
ns_a=loom-a-$id
ns_b=loom-b-$id
veth_a=lva$id
veth_b=lvb$id
store=$(mktemp -d /tmp/loom-netns-store.XXXXXX)

cleanup() {
  ip netns pids "$ns_a" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns pids "$ns_b" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  rm -rf "$store"
}
trap cleanup EXIT

if ! ip netns add "$ns_a" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here (needs root / CAP_NET_ADMIN)"
  exit 77
fi
make_netns_pair "$ns_a" "$ns_b" "$veth_a" "$veth_b" 10.77.0.1/24 10.77.0.2/24
if [ -n "$rate" ]; then
  tc -n "$ns_a" qdisc add dev "$veth_a" root tbf rate "$rate" burst 256kb latency 50ms
  tc -n "$ns_b" qdisc add dev "$veth_b" root tbf rate "$rate" burst 256kb latency 50ms
  echo "# link: veth pair limited to $rate each way by tc tbf"
fi

run_host() {  # namespace rank addr label
  ip netns exec "$1" env LOOM_RANK="$2" LOOM_WORLD_SIZE=2 LOOM_LOCAL_RANK=0 \
    LOOM_LOCAL_WORLD_SIZE=1 LOOM_STORE="file://$store" LOOM_RUN_ID="netns-$id" \
    LOOM_HOST_ADDR="$3" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "${@:5}" 2>&1 | sed -u "s/^/[$4] /"
  return "${PIPESTATUS[0]}"
}

run_host "$ns_a" 0 10.77.0.1 "host a" "$@" &
pid_a=$!
run_host "$ns_b" 1 10.77.0.2 "host b" "$@" &
pid_b=$!
rc=0
wait "$pid_a" || rc=$?
wait "$pid_b" || rc=$?
exit "$rc"
