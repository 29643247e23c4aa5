#!/usr/bin/env bash
# Runs CMD under OpenMPI's mpirun across the two namespaces of scripts/testbed/netns_2host.sh, so
# that MPI (btl tcp) and Gloo share the same shaped veth link. Give it to the testbed as its CMD:
#
#   scripts/testbed/netns_2host.sh --rate 1gbit -- scripts/testbed/netns_mpirun.sh \
#       build/src/loom/cli/loom bench collectives --ops allreduce
#
# In host a (LOOM_RANK=0) it starts `mpirun -n 2 --host 10.77.0.1,10.77.0.2` with itself as the
# launch agent (plm_rsh_agent): instead of ssh, the agent enters host b's namespace with
# `ip netns exec` and starts OpenMPI's daemon there. Each rank gets LOOM_HOST_ADDR = its
# namespace's 10.77.0.x address and the testbed's LOOM_STORE; loom's world comes from mpirun's
# OMPI_* variables. In host b (LOOM_RANK=1) it only waits until host a's mpirun has finished.
# Exit status: mpirun's in host a, 0 in host b. Needs what the testbed needs, plus mpirun.
set -euo pipefail

self=$(readlink -f "$0")
case "${1:-}" in
  --agent)  # launch agent: [options] HOST COMMAND-WORDS... (as ssh would get them)
    shift
    while [ "${1#-}" != "$1" ]; do shift; done
    host=$1; shift
    case "$host" in
      10.77.0.1) ns=loom-a-$LOOM_NETNS_ID ;;
      10.77.0.2) ns=loom-b-$LOOM_NETNS_ID ;;
      *) echo "netns_mpirun: unknown host $host" >&2; exit 1 ;;
    esac
    exec ip netns exec "$ns" /bin/sh -c "$*" ;;
  --rank)  # one MPI rank: this namespace's testbed address, then CMD
    shift
    LOOM_HOST_ADDR=$(ip -4 -o addr show | awk '$4 ~ /^10\.77\.0\./ { sub(/\/.*/, "", $4); print $4; exit }')
    export LOOM_HOST_ADDR
    exec "$@" ;;
esac
[ $# -gt 0 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
: "${LOOM_RUN_ID:?run me as the testbed's CMD}" "${LOOM_STORE:?run me as the testbed's CMD}"
store_dir=${LOOM_STORE#file://}
done_file=$store_dir/mpirun.done
if [ "${LOOM_RANK:-0}" != 0 ]; then  # host b: mpirun in host a starts this host's rank
  while [ ! -e "$done_file" ]; do sleep 0.5; done
  exit 0
fi
trap 'touch "$done_file"' EXIT
export LOOM_NETNS_ID=${LOOM_RUN_ID#netns-}
export LOOM_RUN_ID=netns-mpi-$LOOM_NETNS_ID
unset LOOM_RANK LOOM_WORLD_SIZE LOOM_LOCAL_RANK LOOM_LOCAL_WORLD_SIZE LOOM_HOST_ADDR
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun -n 2 --host 10.77.0.1:1,10.77.0.2:1 --bind-to none \
  --mca plm_rsh_agent "$self --agent" \
  --mca oob_tcp_if_include 10.77.0.0/24 \
  --mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24 \
  -x LOOM_STORE -x LOOM_RUN_ID -x OPENBLAS_NUM_THREADS=1 -x OMP_NUM_THREADS=1 \
  ${LOOM_COMM_TIMEOUT_MS:+-x LOOM_COMM_TIMEOUT_MS} \
  "$self" --rank "$@"
