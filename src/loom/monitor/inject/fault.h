// The interface every fault type implements (one file each: stop_fault.cc, freeze_fault.cc, ...)
// and their factories. Internal to loom_monitor_inject: callers use Inject() in fault_injector.h,
// which validates the spec, calls Apply() once and Undo() at most once after a successful Apply().
//
//   LOOM_ASSIGN_OR_RETURN(std::unique_ptr<internal::Fault> f, internal::MakeFault(spec));
//   LOOM_RETURN_IF_ERROR(f->Apply());
//   ...
//   LOOM_RETURN_IF_ERROR(f->Undo());
//
// Thread-safety: one owner.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include "loom/base/status.h"
#include "loom/monitor/inject/fault_injector.h"

namespace loom::monitor::internal {

class Fault {
 public:
  virtual ~Fault() = default;
  // Puts the fault in place. On error leaves nothing behind.
  virtual Status Apply() = 0;
  // Takes the fault away (best effort through every step; returns the first error).
  virtual Status Undo() = 0;
  // Adds what was applied (quota, cgroup directory, nft table, ...) to the record's parameters.
  virtual void DescribeParameters(nlohmann::json* params) const = 0;
};

Result<std::unique_ptr<Fault>> MakeStopFault(const FaultSpec& spec);
Result<std::unique_ptr<Fault>> MakeFreezeFault(const FaultSpec& spec);
Result<std::unique_ptr<Fault>> MakeKillFault(const FaultSpec& spec);
Result<std::unique_ptr<Fault>> MakeCpuQuotaFault(const FaultSpec& spec);
Result<std::unique_ptr<Fault>> MakeMemLimitFault(const FaultSpec& spec);
Result<std::unique_ptr<Fault>> MakeTbfFault(const FaultSpec& spec);
Result<std::unique_ptr<Fault>> MakeDropFault(const FaultSpec& spec);
Result<std::unique_ptr<Fault>> MakeFlapFault(const FaultSpec& spec);

// Dispatches on spec.type (spec already validated).
Result<std::unique_ptr<Fault>> MakeFault(const FaultSpec& spec);

// A name no other live injection uses: "<prefix>[<target>-]<our pid>-<counter>".
std::string UniqueInjectionName(const std::string& prefix, const std::string& target);

}  // namespace loom::monitor::internal
