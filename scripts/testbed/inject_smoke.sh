#!/usr/bin/env bash
# Smoke test of `loom monitor inject`: every fault type applied briefly to throw-away targets
# (sleep / busy-loop processes, a veth pair between two network namespaces this script creates),
# its effect checked while it holds and its revert checked afterwards:
#   stop       /proc/PID/stat state T, back to S
#   freeze     pid in a loom-inject freezer cgroup reading FROZEN; back in its cgroup, cgroup gone
#   cpu_quota  busy loop's cgroup cpu.stat nr_throttled > 0; back in its cgroup
#   mem_limit  memory.limit_in_bytes = 256 MiB; back in its cgroup
#   kill       `wait` sees 137 (SIGKILL)
#   tbf        `tc qdisc show` lists tbf on the veth; gone after
#   drop       `nft list ruleset` has the numgen drop rule; table gone after
#   flap       TCP connect through the veth fails during the flap, works (refused by B) after
# plus an early revert on SIGTERM (as on Ctrl-C) and the ground-truth log: one JSON line per
# injection with onset_ms and end_ms.
#
#   scripts/testbed/inject_smoke.sh [--loom build/src/loom/cli/loom] [--log FILE.jsonl]
#
# Needs root, cgroup v1 (freezer, cpu, memory), iproute2 and nft (package nftables). Exit status:
# 0 all checks passed, 1 a check failed, 2 usage, 77 not root / no namespaces. Bounded: a
# watchdog ends it after 60 s. Everything it creates is removed on exit (also on Ctrl-C).
source "$(dirname "$0")/netns_pair.sh"
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
loom=${LOOM:-$here/../../build/src/loom/cli/loom}
keep_log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --loom) loom=$2; shift 2 ;;
    --log) keep_log=$2; shift 2 ;;
    *) echo "usage: $0 [--loom PATH] [--log FILE.jsonl]" >&2; exit 2 ;;
  esac
done
if [ ! -x "$loom" ]; then
  echo "inject_smoke: no loom binary at $loom (build it or pass --loom)" >&2
  exit 2
fi
[ "$(id -u)" -eq 0 ] || { echo "SKIP: inject_smoke needs root"; exit 77; }

id=$$
ns_a=loom-inj-a-$id
ns_b=loom-inj-b-$id
veth_a=lsa$id
veth_b=lsb$id
work=$(mktemp -d /tmp/loom-inject-smoke.XXXXXX)
log=$work/injections.jsonl
targets=()
injectors=()
fails=0
created_ns=0

cleanup() {
  trap - EXIT INT TERM
  # Injectors revert on SIGTERM; give them a moment, then make sure.
  for p in "${injectors[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${injectors[@]}"; do wait "$p" 2>/dev/null || true; done
  # Safety net for injectors killed without reverting (only their dead-owner leftovers go).
  "$loom" monitor inject --cleanup >/dev/null 2>&1 || true
  for p in "${targets[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null || true; done
  for p in "${targets[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -n "${watchdog:-}" ] && kill "$watchdog" 2>/dev/null
  if [ "$created_ns" = 1 ]; then
    ip netns del "$ns_a" 2>/dev/null || true
    ip netns del "$ns_b" 2>/dev/null || true
  fi
  [ -n "$keep_log" ] && [ -f "$log" ] && cp "$log" "$keep_log"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "inject_smoke: interrupted"; exit 130' INT TERM
(
  trap 'kill "$s" 2>/dev/null; exit 0' TERM
  sleep 60 & s=$!
  wait "$s" && { echo "inject_smoke: watchdog: over 60 s" >&2; kill -TERM $$; }
) &
watchdog=$!

check() {  # description command...
  local what=$1; shift
  if "$@"; then echo "ok    $what"; else echo "FAIL  $what"; fails=$((fails + 1)); fi
}

if ! ip netns add "$ns_a" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces"
  exit 77
fi
created_ns=1
make_netns_pair "$ns_a" "$ns_b" "$veth_a" "$veth_b" 10.78.1.1/24 10.78.1.2/24

# Starts `loom monitor inject ARGS` in the background (its pid in $inj) and waits HOLD seconds
# for the fault to be in place.
start_inject() {
  "$loom" monitor inject --log "$log" "$@" >>"$work/records.out" 2>>"$work/inject.err" &
  inj=$!
  injectors+=("$inj")
  sleep 0.5
}
finish_inject() {  # waits for the injector started last; true if it exited 0
  wait "$inj"
}
state_of() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }
cg_of() {  # pid controller -> the pid's cgroup path in that v1 hierarchy
  awk -F: -v c="$2" '{n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3}' \
    "/proc/$1/cgroup"
}
# TCP connect A -> B port 9 (nothing listens): "refused" means B answered, i.e. the link works.
link_works() {
  local out
  out=$(ip netns exec "$ns_a" timeout 2 bash -c 'exec 3<>/dev/tcp/10.78.1.2/9' 2>&1)
  grep -q refused <<<"$out"
}
link_fails() { ! link_works; }

# --- stop
sleep 300 & t=$!; targets+=("$t")
start_inject --fault stop --pid "$t" --duration 1.5
check "stop: target state T during the fault" test "$(state_of "$t")" = T
check "stop: injector exits 0" finish_inject
check "stop: target state S after revert" test "$(state_of "$t")" = S

# --- freeze
orig=$(cg_of "$t" freezer)
start_inject --fault freeze --pid "$t" --duration 1.5
during=$(cg_of "$t" freezer)
check "freeze: target moved into a loom-inject freezer cgroup" grep -q loom-inject <<<"$during"
check "freeze: freezer.state FROZEN" grep -qx FROZEN "/sys/fs/cgroup/freezer$during/freezer.state"
check "freeze: injector exits 0" finish_inject
check "freeze: target back in its freezer cgroup" test "$(cg_of "$t" freezer)" = "$orig"
check "freeze: cgroup removed" test ! -d "/sys/fs/cgroup/freezer$during"
check "freeze: target running again (state S)" test "$(state_of "$t")" = S

# --- mem_limit
orig=$(cg_of "$t" memory)
start_inject --fault mem_limit --pid "$t" --mem 256MiB --duration 1.5
during=$(cg_of "$t" memory)
check "mem_limit: memory.limit_in_bytes = 268435456" \
  grep -qx 268435456 "/sys/fs/cgroup/memory$during/memory.limit_in_bytes"
check "mem_limit: injector exits 0" finish_inject
check "mem_limit: target back in its memory cgroup" test "$(cg_of "$t" memory)" = "$orig"
check "mem_limit: cgroup removed" test ! -d "/sys/fs/cgroup/memory$during"

# --- SIGTERM (as Ctrl-C) reverts early
start_inject --fault stop --pid "$t" --duration 30
kill -TERM "$inj"
check "early revert: injector exits 0 on SIGTERM" finish_inject
check "early revert: target state S" test "$(state_of "$t")" = S

# --- kill
start_inject --fault kill --pid "$t"
check "kill: injector exits 0" finish_inject
wait "$t"; rc=$?
check "kill: wait sees 137 (SIGKILL), got $rc" test "$rc" = 137

# --- cpu_quota on a busy loop
bash -c 'while :; do :; done' & b=$!; targets+=("$b")
orig=$(cg_of "$b" cpu)
start_inject --fault cpu_quota --pid "$b" --cpu-fraction 0.2 --duration 2
during=$(cg_of "$b" cpu)
sleep 1
throttled=$(awk '$1 == "nr_throttled" {print $2}' "/sys/fs/cgroup/cpu$during/cpu.stat" 2>/dev/null)
check "cpu_quota: cfs_quota_us = 20000" grep -qx 20000 "/sys/fs/cgroup/cpu$during/cpu.cfs_quota_us"
check "cpu_quota: nr_throttled > 0 (got ${throttled:-none})" test "${throttled:-0}" -gt 0
check "cpu_quota: injector exits 0" finish_inject
check "cpu_quota: target back in its cpu cgroup" test "$(cg_of "$b" cpu)" = "$orig"
kill -9 "$b"; wait "$b" 2>/dev/null

# --- tbf
start_inject --fault tbf --dev "$veth_a" --netns "$ns_a" --rate 10mbit --duration 1.5
check "tbf: tc qdisc shows tbf rate 10Mbit" \
  grep -q "tbf .*rate 10Mbit" <<<"$(tc -n "$ns_a" qdisc show dev "$veth_a")"
check "tbf: injector exits 0" finish_inject
check "tbf: qdisc removed" bash -c "! tc -n $ns_a qdisc show dev $veth_a | grep -q tbf"

# --- drop
start_inject --fault drop --dev "$veth_a" --netns "$ns_a" --drop 0.05 --duration 1.5
check "drop: nft rule numgen random mod 10000 < 500 drop" \
  grep -q "numgen random mod 10000 < 500 drop" <<<"$(ip netns exec "$ns_a" nft list ruleset)"
check "drop: injector exits 0" finish_inject
check "drop: loom table removed" \
  bash -c "! ip netns exec $ns_a nft list ruleset | grep -q loom_inject"

# --- flap
check "flap: link works before" link_works
start_inject --fault flap --dev "$veth_a" --netns "$ns_a" --duration 2
check "flap: ip link shows state DOWN" \
  grep -q "state DOWN" <<<"$(ip -n "$ns_a" link show dev "$veth_a")"
check "flap: connect through the veth fails during the flap" link_fails
check "flap: injector exits 0" finish_inject
up=1
for _ in 1 2 3 4 5 6 7 8 9 10; do link_works && { up=0; break; }; sleep 0.2; done
check "flap: link works again after revert" test "$up" = 0

# --- ground truth
check "log: 9 records" test "$(wc -l <"$log")" = 9
check "log: every record has onset_ms, end_ms and revert ok" \
  test "$(grep -c '"end_ms":[0-9].*"onset_ms":[0-9].*"revert":"ok"' "$log")" = 9
injectors=()
if [ "$fails" -ne 0 ]; then
  echo "inject_smoke: $fails check(s) failed; injector stderr:"
  cat "$work/inject.err"
  exit 1
fi
echo "inject_smoke: all checks passed"
