// drop: packet loss. A loom-owned nftables table (inet family, named loom_inject_<pid>_<n>) with
// one output-hook chain dropping packets that leave DEV with probability drop_fraction
// (`oifname DEV numgen random mod 10000 < p*10000 drop`, i.e. 0.01% resolution; egress only,
// like netem loss). Revert deletes the table. Needs the `nft` tool (Debian package nftables).
#include <cmath>
#include <nlohmann/json.hpp>

#include "loom/monitor/inject/command_runner.h"
#include "loom/monitor/inject/fault.h"
#include "loom/monitor/inject/net_device.h"

namespace loom::monitor::internal {
namespace {

constexpr int kModulus = 10000;

class DropFault : public Fault {
 public:
  explicit DropFault(const FaultSpec& spec)
      : dev_(spec.dev),
        netns_(spec.netns),
        fraction_(spec.drop_fraction),
        threshold_(static_cast<int>(std::lround(spec.drop_fraction * kModulus))) {
    std::string name = UniqueInjectionName("loom_inject_", "");
    for (char& c : name) c = c == '-' ? '_' : c;
    table_ = name;
  }

  Status Apply() override {
    LOOM_RETURN_IF_ERROR(CheckNetDevice(dev_, netns_));
    const std::string rule = "add table inet " + table_ +
                             " { chain egress { type filter hook output priority 0; policy "
                             "accept; oifname \"" +
                             dev_ + "\" numgen random mod " + std::to_string(kModulus) + " < " +
                             std::to_string(threshold_) + " drop; }; }";
    auto out = RunChecked({"nft", rule}, netns_);
    if (out.status().code() == StatusCode::kNotFound) {
      return FailedPreconditionError("drop needs the 'nft' tool (Debian package nftables): " +
                                     out.status().message());
    }
    return out.status();
  }

  Status Undo() override {
    return RunChecked({"nft", "delete", "table", "inet", table_}, netns_).status();
  }

  void DescribeParameters(nlohmann::json* params) const override {
    (*params)["drop_fraction"] = fraction_;
    (*params)["nft_table"] = "inet " + table_;
    (*params)["rule"] = "oifname " + dev_ + " numgen random mod " + std::to_string(kModulus) +
                        " < " + std::to_string(threshold_) + " drop";
  }

 private:
  std::string dev_, netns_;
  double fraction_;
  int threshold_;
  std::string table_;
};

}  // namespace

Result<std::unique_ptr<Fault>> MakeDropFault(const FaultSpec& spec) {
  return std::unique_ptr<Fault>(new DropFault(spec));
}

}  // namespace loom::monitor::internal
