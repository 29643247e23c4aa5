#include "loom/monitor/inject/fault_injector.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"
#include "loom/monitor/inject/command_runner.h"
#include "loom/monitor/inject/fault.h"
#include "loom/monitor/inject/process_target.h"
#include "loom/monitor/inject/tc_rate.h"

namespace loom::monitor {
namespace {

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool IsPidFault(const std::string& type) {
  return type == "stop" || type == "freeze" || type == "kill" || type == "cpu_quota" ||
         type == "mem_limit";
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

Status Unused(const std::string& type, const char* field, const char* flag, bool set) {
  if (!set) return OkStatus();
  return InvalidArgumentError(std::string(field) + " (" + flag + ") does not apply to fault '" +
                              type + "'");
}

}  // namespace

namespace internal {

std::string UniqueInjectionName(const std::string& prefix, const std::string& target) {
  static std::atomic<int> counter{0};
  return prefix + (target.empty() ? "" : target + "-") + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1));
}

Result<std::unique_ptr<Fault>> MakeFault(const FaultSpec& spec) {
  const std::string& t = spec.type;
  if (t == "stop") return MakeStopFault(spec);
  if (t == "freeze") return MakeFreezeFault(spec);
  if (t == "kill") return MakeKillFault(spec);
  if (t == "cpu_quota") return MakeCpuQuotaFault(spec);
  if (t == "mem_limit") return MakeMemLimitFault(spec);
  if (t == "tbf") return MakeTbfFault(spec);
  if (t == "drop") return MakeDropFault(spec);
  if (t == "flap") return MakeFlapFault(spec);
  return InvalidArgumentError("unknown fault type '" + t + "'");
}

}  // namespace internal

const std::vector<std::string>& FaultTypes() {
  static const std::vector<std::string> kTypes = {"stop",      "freeze", "kill", "cpu_quota",
                                                  "mem_limit", "tbf",    "drop", "flap"};
  return kTypes;
}

Status ValidateFaultSpec(const FaultSpec& s) {
  const std::string& t = s.type;
  bool known = false;
  for (const std::string& k : FaultTypes()) known = known || k == t;
  if (!known) {
    std::string all;
    for (const std::string& k : FaultTypes()) all += (all.empty() ? "" : ", ") + k;
    return InvalidArgumentError("fault type (--fault) '" + t + "' is not one of: " + all);
  }
  if (!std::isfinite(s.duration_s) || s.duration_s < 0) {
    return InvalidArgumentError("duration_s (--duration) must be a finite number >= 0, got " +
                                std::to_string(s.duration_s));
  }
  if (t == "kill" && s.duration_s != 0) {
    return InvalidArgumentError(
        "duration_s (--duration) must be 0 for kill (a kill cannot be "
        "reverted)");
  }
  if (IsPidFault(t)) {
    if (s.pid == 0) return InvalidArgumentError("fault '" + t + "' needs pid (--pid)");
    if (s.pid < 0) {
      return InvalidArgumentError("pid (--pid) must be positive, got " + std::to_string(s.pid));
    }
    LOOM_RETURN_IF_ERROR(Unused(t, "dev", "--dev", !s.dev.empty()));
    LOOM_RETURN_IF_ERROR(Unused(t, "netns", "--netns", !s.netns.empty()));
  } else {
    if (s.dev.empty()) return InvalidArgumentError("fault '" + t + "' needs dev (--dev)");
    LOOM_RETURN_IF_ERROR(Unused(t, "pid", "--pid", s.pid != 0));
  }
  if (t == "cpu_quota") {
    if (!(s.cpu_fraction > 0 && s.cpu_fraction <= 64)) {
      return InvalidArgumentError("cpu_quota needs cpu_fraction (--cpu-fraction) in (0, 64], got " +
                                  std::to_string(s.cpu_fraction));
    }
  } else {
    LOOM_RETURN_IF_ERROR(Unused(t, "cpu_fraction", "--cpu-fraction", s.cpu_fraction != 0));
  }
  if (t == "mem_limit") {
    if (s.mem_bytes < 4096) {
      return InvalidArgumentError("mem_limit needs mem_bytes (--mem) >= 4096, got " +
                                  std::to_string(s.mem_bytes));
    }
  } else {
    LOOM_RETURN_IF_ERROR(Unused(t, "mem_bytes", "--mem", s.mem_bytes != 0));
  }
  if (t == "tbf") {
    LOOM_RETURN_IF_ERROR(ParseTcRate(s.rate).status());
  } else {
    LOOM_RETURN_IF_ERROR(Unused(t, "rate", "--rate", !s.rate.empty()));
  }
  if (t == "drop") {
    if (!(s.drop_fraction > 0 && s.drop_fraction <= 1)) {
      return InvalidArgumentError("drop needs drop_fraction (--drop) in (0, 1], got " +
                                  std::to_string(s.drop_fraction));
    }
  } else {
    LOOM_RETURN_IF_ERROR(Unused(t, "drop_fraction", "--drop", s.drop_fraction != 0));
  }
  return OkStatus();
}

Injection::Injection(FaultSpec spec, std::unique_ptr<internal::Fault> fault, int64_t onset_ms)
    : spec_(std::move(spec)), fault_(std::move(fault)), onset_ms_(onset_ms) {}

Injection::~Injection() { Revert().IgnoreError(); }

Status Injection::Revert() {
  if (reverted_) return revert_status_;
  reverted_ = true;
  if (IsPidFault(spec_.type)) target_alive_at_end_ = ProcessAlive(spec_.pid) ? 1 : 0;
  revert_status_ = fault_->Undo();
  end_ms_ = spec_.type == "kill" ? onset_ms_ : WallMs();
  if (!spec_.log_path.empty()) {
    Status s = AppendLine(spec_.log_path, RecordJson());
    if (revert_status_.ok()) revert_status_ = s;
  }
  return revert_status_;
}

std::string Injection::RecordJson() const {
  nlohmann::json target;
  if (IsPidFault(spec_.type)) {
    target["pid"] = spec_.pid;
  } else {
    target["dev"] = spec_.dev;
    target["netns"] = spec_.netns;
  }
  nlohmann::json params = nlohmann::json::object();
  fault_->DescribeParameters(&params);
  nlohmann::json r = {{"type", spec_.type},
                      {"target", target},
                      {"onset_ms", onset_ms_},
                      {"end_ms", nullptr},
                      {"duration_s", nullptr},
                      {"planned_duration_s", spec_.duration_s},
                      {"parameters", params},
                      {"host", HostName()},
                      {"injector_pid", static_cast<int>(::getpid())},
                      {"revert", nullptr}};
  if (reverted_) {
    r["end_ms"] = end_ms_;
    r["duration_s"] = static_cast<double>(end_ms_ - onset_ms_) / 1000.0;
    r["revert"] = revert_status_.ok() ? "ok" : revert_status_.ToString();
    if (target_alive_at_end_ >= 0) r["target_alive_at_end"] = target_alive_at_end_ == 1;
  }
  return r.dump();
}

Result<std::unique_ptr<Injection>> Inject(const FaultSpec& spec) {
  LOOM_RETURN_IF_ERROR(ValidateFaultSpec(spec));
  if (IsPidFault(spec.type)) LOOM_RETURN_IF_ERROR(CheckTargetPid(spec.pid));
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<internal::Fault> fault, internal::MakeFault(spec));
  LOOM_RETURN_IF_ERROR(fault->Apply().WithContext("inject " + spec.type));
  const int64_t onset = WallMs();
  return std::unique_ptr<Injection>(new Injection(spec, std::move(fault), onset));
}

}  // namespace loom::monitor
