// Fault injection on real processes and links: the ground truth for evaluating detectors on real
// multi-process runs (spec fault_detection.md §8.1). An Injection is RAII: the fault is in place
// from construction (Inject) until Revert() or the destructor; every injection can append one JSON
// line (type, target, onset_ms, end_ms, parameters, host) to a ground-truth log when it ends.
//
//   FaultSpec spec;
//   spec.type = "cpu_quota";
//   spec.pid = rank_pid;
//   spec.cpu_fraction = 0.3;             // 30% of one core
//   spec.log_path = "injections.jsonl";
//   LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Injection> inj, Inject(spec));
//   std::this_thread::sleep_for(std::chrono::seconds(30));
//   LOOM_RETURN_IF_ERROR(inj->Revert());  // also done by ~Injection
//
// Fault types (one file each): stop (SIGSTOP/SIGCONT), freeze (cgroup v1 freezer), kill (SIGKILL,
// not revertible), cpu_quota (cgroup v1 cpu.cfs_quota_us), mem_limit (cgroup v1
// memory.limit_in_bytes; the target may be OOM-killed: that is the fault), tbf (tc tbf root qdisc
// on a device), drop (nftables random drop in a loom-owned table), flap (link down, up on revert).
// Network faults run their commands inside `netns` (`ip netns exec NS ...`) when it is set.
//
// Needs root (cgroup v1 hierarchies under /sys/fs/cgroup/<controller>, iproute2, nft for drop).
// Thread-safety: an Injection has one owner; Revert() is not safe to call concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::monitor {

namespace internal {
class Fault;
}  // namespace internal

// What to inject. Fields that do not apply to `type` must keep their defaults.
struct FaultSpec {
  std::string type;          // stop | freeze | kill | cpu_quota | mem_limit | tbf | drop | flap
  int pid = 0;               // target process (stop, freeze, kill, cpu_quota, mem_limit)
  std::string dev;           // target network device (tbf, drop, flap), e.g. one end of a veth pair
  std::string netns;         // named network namespace holding `dev` ("" = the current namespace)
  double duration_s = 0;     // planned duration (recorded; the caller waits, then reverts)
  double cpu_fraction = 0;   // cpu_quota: share of one core, (0, 64]
  int64_t mem_bytes = 0;     // mem_limit: memory.limit_in_bytes, >= 4096
  std::string rate;          // tbf: tc rate, <number>[k|m|g|t]bit or <number>[k|m|g|t]bps
  double drop_fraction = 0;  // drop: probability a packet leaving `dev` is dropped, (0, 1]
  std::string log_path;      // ground-truth JSONL appended to when the injection ends ("" = none)
};

// The fault types Inject understands, in a stable order.
const std::vector<std::string>& FaultTypes();

// Checks `spec` without touching the system; errors name the field and its CLI flag.
Status ValidateFaultSpec(const FaultSpec& spec);

// A fault in place. Reverted by Revert() or, at the latest, by the destructor.
class Injection {
 public:
  ~Injection();
  Injection(const Injection&) = delete;
  Injection& operator=(const Injection&) = delete;

  // Undoes the fault (kill: nothing to undo), records end_ms and appends the ground-truth line
  // to spec().log_path. Idempotent: later calls do nothing and return the first call's status.
  Status Revert();

  const FaultSpec& spec() const { return spec_; }
  bool reverted() const { return reverted_; }
  // CLOCK_REALTIME milliseconds when the fault took effect / was undone (kill: end = onset).
  int64_t onset_ms() const { return onset_ms_; }
  int64_t end_ms() const { return end_ms_; }  // -1 until reverted
  // The ground-truth record (one JSON object, no newline): type, target, onset_ms, end_ms
  // (null until reverted), duration_s, planned_duration_s, parameters (what was applied,
  // including the cgroup directory or nft table it created), host, revert ("ok" or the error).
  std::string RecordJson() const;

 private:
  friend Result<std::unique_ptr<Injection>> Inject(const FaultSpec& spec);
  Injection(FaultSpec spec, std::unique_ptr<internal::Fault> fault, int64_t onset_ms);

  FaultSpec spec_;
  std::unique_ptr<internal::Fault> fault_;
  int64_t onset_ms_ = 0;
  int64_t end_ms_ = -1;
  bool reverted_ = false;
  int target_alive_at_end_ = -1;  // pid faults: 1/0 whether the target still existed at revert
  Status revert_status_;
};

// Validates `spec`, applies the fault and returns it in place. On error nothing is left behind.
Result<std::unique_ptr<Injection>> Inject(const FaultSpec& spec);

}  // namespace loom::monitor
