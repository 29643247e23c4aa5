#!/usr/bin/env bash
# Real peers of `loom bench overlap` (issue 7): OpenMPI and Gloo versions of AG+GEMM, GEMM+RS and
# the MoE layer, two ranks in two network namespaces joined by a veth pair shaped with `tc tbf`
# to each given rate (each direction). Writes one JSON per (op, impl, rate) into DIR, from
# `loom bench overlap-peer` (src/loom/cli/cmd_bench_overlap_peer.cc).
#
#   scripts/bench/overlap_peers.sh --rate-mbps 200,400 --out /tmp/peers [--op ag_gemm,gemm_rs,moe]
#       [--impl mpi,mpi_decomposed,gloo,gloo_decomposed,torch_decomposed] [--shape 512,2048,512]
#       [--routing uniform,zipf] [--quick] [--loom build/src/loom/cli/loom]
#       [--mpi-mca "--mca btl_tcp_links 2"] [-- extra overlap-peer flags]
#
# A rate of 0 means an unshaped veth (the negative control).
#
# How MPI runs across the namespaces (mpirun cannot start a rank in another namespace by
# itself): mpirun runs inside namespace A with a two-host hostfile (the two veth addresses) and
# `--mca plm_rsh_agent` pointing at a generated stand-in for ssh that runs the ORTE daemon's
# command line under `ip netns exec` of the namespace owning that address. So each rank runs in
# its own namespace with its own daemon/PMIx server, exactly as on two hosts, and
# `--mca btl self,tcp --mca btl_tcp_if_include <subnet>` puts MPI's traffic on the shaped veth.
# Gloo ranks are started directly in each namespace with loom's world variables (a file store
# both see), like scripts/testbed/netns_2host.sh. torch_decomposed (ag_gemm and gemm_rs only) is
# scripts/bench/overlap_torch_peer.py under Debian's /usr/bin/python3 (python3-torch, gloo
# backend), one rank per namespace, rendezvous over the veth (MASTER_ADDR = namespace A).
#
# Needs root (CAP_NET_ADMIN), iproute2 and tc; exits 77 when namespaces are unavailable. Cleans
# up its namespaces and temp files on every exit path. Traffic stays inside its own namespaces
# (10.79.0.0/24).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$root/scripts/testbed/netns_pair.sh"

rates="" out="" ops="ag_gemm,gemm_rs,moe" shape="512,2048,512"
impls="mpi,mpi_decomposed,gloo,gloo_decomposed"
routings="uniform,zipf" quick=0 loom="$root/build/src/loom/cli/loom" mpi_mca="" arm_timeout=900
usage() {
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --rate-mbps) rates=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --op) ops=$2; shift 2 ;;
    --impl) impls=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --routing) routings=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --loom) loom=$2; shift 2 ;;
    --mpi-mca) mpi_mca=$2; shift 2 ;;
    --arm-timeout) arm_timeout=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "overlap_peers.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
extra=("$@")
[ -n "$rates" ] && [ -n "$out" ] || usage
IFS=, read -r m_shard k n <<<"$shape"
[ -n "${n:-}" ] || { echo "overlap_peers.sh: --shape wants M_SHARD,K,N" >&2; exit 2; }

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "SKIP: overlap_peers.sh needs root, iproute2 and tc"
  exit 77
fi
if [ ! -x "$loom" ]; then
  echo "overlap_peers.sh: no loom binary at $loom (build it or pass --loom)" >&2
  exit 2
fi
loom=$(cd "$(dirname "$loom")" && pwd)/$(basename "$loom")
mkdir -p "$out"

trial_flags=(--trials 11 --warmup 2)
moe_flags=()
if [ "$quick" = 1 ]; then
  trial_flags=(--trials 3 --warmup 1)
  moe_flags=(--tokens 1024)
fi

id=$$
ns_a=loom-pa-$id
ns_b=loom-pb-$id
veth_a=lpa$id
veth_b=lpb$id
addr_a=10.79.0.1
addr_b=10.79.0.2
subnet=10.79.0.0/24
tmp=$(mktemp -d /tmp/loom-overlap-peers.XXXXXX)

teardown_pair() {
  local ns
  for ns in "$ns_a" "$ns_b"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
}
cleanup() {
  teardown_pair
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! ip netns add "$ns_a" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here (needs root / CAP_NET_ADMIN)"
  exit 77
fi
ip netns del "$ns_a"

# mpirun's stand-in for ssh: "agent HOST CMD..." runs CMD in the namespace that owns HOST.
printf '%s %s\n%s %s\n' "$addr_a" "$ns_a" "$addr_b" "$ns_b" >"$tmp/nsmap"
printf '%s slots=1\n%s slots=1\n' "$addr_a" "$addr_b" >"$tmp/hosts"
cat >"$tmp/agent" <<EOF
#!/bin/sh
host=\$1; shift
ns=\$(awk -v h="\$host" '\$1 == h { print \$2 }' "$tmp/nsmap")
[ -n "\$ns" ] || { echo "overlap_peers agent: no namespace for host \$host" >&2; exit 255; }
exec ip netns exec "\$ns" /bin/sh -c "\$*"
EOF
chmod +x "$tmp/agent"

make_pair() {  # rate_mbps (0: unshaped)
  ip netns add "$ns_a"
  make_netns_pair "$ns_a" "$ns_b" "$veth_a" "$veth_b" "$addr_a/24" "$addr_b/24"
  if [ "$1" != 0 ]; then
    tc -n "$ns_a" qdisc add dev "$veth_a" root tbf rate "${1}mbit" burst 256kb latency 50ms
    tc -n "$ns_b" qdisc add dev "$veth_b" root tbf rate "${1}mbit" burst 256kb latency 50ms
  fi
}

run_mpi() {  # json_file overlap-peer-args...
  # shellcheck disable=SC2086  # --mpi-mca is a list of words on purpose
  timeout "$arm_timeout" ip netns exec "$ns_a" mpirun --allow-run-as-root -np 2 \
    --hostfile "$tmp/hosts" --mca plm_rsh_agent "$tmp/agent" \
    --mca btl self,tcp --mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet" \
    $mpi_mca -x OPENBLAS_NUM_THREADS=1 -x OMP_NUM_THREADS=1 \
    "$loom" bench overlap-peer "${@:2}" --json "$1"
}

# Starts "rank_fn NS RANK ENDPOINT args..." in both namespaces at once (rank 0 in A with
# ENDPOINT_A and "--json JSON_FILE" appended, rank 1 in B with ENDPOINT_B) and waits for both;
# returns the last non-zero exit status, 0 when both succeed.
run_rank_pair() {  # rank_fn endpoint_a endpoint_b json_file overlap-peer-args...
  local rank_fn=$1 end_a=$2 end_b=$3 json_file=$4 pid_a pid_b rc=0
  shift 4
  "$rank_fn" "$ns_a" 0 "$end_a" "$@" --json "$json_file" &
  pid_a=$!
  "$rank_fn" "$ns_b" 1 "$end_b" "$@" &
  pid_b=$!
  wait "$pid_a" || rc=$?
  wait "$pid_b" || rc=$?
  return "$rc"
}

run_gloo() {  # json_file overlap-peer-args...
  local store run
  store=$(mktemp -d "$tmp/store.XXXXXX")
  run=overlap-peer-$id-$RANDOM
  gloo_rank() {  # ns rank addr overlap-peer-args...
    ip netns exec "$1" env LOOM_RANK="$2" LOOM_WORLD_SIZE=2 LOOM_LOCAL_RANK=0 \
      LOOM_LOCAL_WORLD_SIZE=1 LOOM_STORE="file://$store" LOOM_RUN_ID="$run" \
      LOOM_HOST_ADDR="$3" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \
      timeout "$arm_timeout" "$loom" bench overlap-peer "${@:4}"
  }
  run_rank_pair gloo_rank "$addr_a" "$addr_b" "$@"
}

run_torch() {  # json_file overlap-peer-args...
  local port
  port=$((20000 + RANDOM % 20000))
  torch_rank() {  # ns rank veth overlap_torch_peer.py-args...
    ip netns exec "$1" env RANK="$2" WORLD_SIZE=2 MASTER_ADDR="$addr_a" MASTER_PORT="$port" \
      GLOO_SOCKET_IFNAME="$3" OMP_NUM_THREADS=1 \
      timeout "$arm_timeout" /usr/bin/python3 "$here/overlap_torch_peer.py" "${@:4}"
  }
  run_rank_pair torch_rank "$veth_a" "$veth_b" "$@"
}

failures=0
IFS=, read -r -a rate_list <<<"$rates"
IFS=, read -r -a op_list <<<"$ops"
IFS=, read -r -a impl_list <<<"$impls"
IFS=, read -r -a routing_list <<<"$routings"
for rate in "${rate_list[@]}"; do
  make_pair "$rate"
  echo "# rate ${rate} Mbit/s each way (tbf on ${veth_a}/${veth_b}; 0 = unshaped)"
  for op in "${op_list[@]}"; do
    variants=("")
    [ "$op" = moe ] && variants=("${routing_list[@]}")
    for routing in "${variants[@]}"; do
      if [ "$op" = moe ]; then
        args=(--op moe --routing "$routing" "${moe_flags[@]}")
        tag="moe_${routing}"
      else
        args=(--op "$op" --m-shard "$m_shard" --k "$k" --n "$n")
        tag="${op}_${m_shard}x${k}x${n}"
      fi
      for impl in "${impl_list[@]}"; do
        json="$out/${tag}_${impl}_r${rate}.json"
        all=(--impl "$impl" "${args[@]}" "${trial_flags[@]}" --rate-mbps "$rate" "${extra[@]}")
        rc=0
        case "$impl" in
          mpi|mpi_decomposed) run_mpi "$json" "${all[@]}" || rc=$? ;;
          gloo|gloo_decomposed) run_gloo "$json" "${all[@]}" || rc=$? ;;
          torch_decomposed) run_torch "$json" "${all[@]}" || rc=$? ;;
          *) echo "overlap_peers.sh: unknown impl $impl" >&2; rc=2 ;;
        esac
        if [ "$rc" != 0 ]; then
          echo "FAILED: $tag $impl rate $rate (exit $rc)" >&2
          failures=$((failures + 1))
        fi
      done
    done
  done
  teardown_pair
done
echo "# results in $out ($failures failed arms)"
[ "$failures" = 0 ]
