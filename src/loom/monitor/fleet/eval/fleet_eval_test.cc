// A tiny end-to-end run of the simulated-fleet evaluation (the machinery, not the numbers).
#include "loom/monitor/fleet/eval/fleet_eval.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loom::monitor {
namespace {

TEST(FleetEvalTest, TinyRunCalibratesOnValidationAndReportsSummary) {
  FleetEvalOptions o = FleetEvalOptions::Quick();
  o.machines = 16;
  o.seconds = 3600;
  o.train_jobs = o.val_jobs = o.test_jobs = 1;
  o.faults_per_machine_day = 12;
  o.detectors = {"minder", "mahalanobis", "heartbeat"};
  o.timing_machines = {16};
  o.timing_seconds = 120;
  o.bootstrap = 50;
  Result<nlohmann::json> r = RunFleetEval(o, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const nlohmann::json& rep = *r;
  ASSERT_EQ(rep["detectors"].size(), 6u);  // 3 detectors x {streaming, batch}
  EXPECT_GT(rep["config"]["must_alarm_faults"][2].get<int>(), 0);
  // Must-alarm faults outlast the streaming gate of the windowed detectors: T_c + w = 48 s.
  EXPECT_EQ(rep["config"]["min_fault_s"].get<int64_t>(), 48);
  EXPECT_EQ(rep["config"]["max_fault_s"].get<int64_t>(), 900);
  for (const nlohmann::json& row : rep["detectors"]) {
    if (row["detector"] == "minder") {
      EXPECT_LE(row["val_fa_per_machine_day"].get<double>(), o.fa_budget) << row.dump();
      // Gate span: (T_c + w - 1) / min_fraction = (30 + 17) / 0.8 -> 59 s streaming,
      // (240 + 17) / 0.8 -> 322 s batch, so a relaxed gate still needs T_c + w - 1 hits.
      EXPECT_EQ(row["continuity_s"].get<int64_t>(), row["mode"] == "streaming" ? 59 : 322);
    }
    EXPECT_GE(row["f1"].get<double>(), row["f1_ci"][0].get<double>() - 1e-12);
    EXPECT_LE(row["f1"].get<double>(), row["f1_ci"][1].get<double>() + 1e-12);
  }
  for (const char* key : {"minder_f1", "mahalanobis_f1", "false_alarms_per_machine_day",
                          "ttd_p50_straggler_s", "ttd_p50_hang_s", "per_call_ms_1024"}) {
    EXPECT_TRUE(rep["summary"].contains(key)) << key;
  }
  EXPECT_TRUE(rep["summary"]["per_call_ms_1024"].is_null());  // N = 1024 not timed here
  EXPECT_EQ(rep["timing"][0]["machines"], 16);
  EXPECT_EQ(rep["priority"].size(), 8u);  // CART ranks all 8 simulated metrics
  EXPECT_FALSE(FormatEvalTable(rep).empty());
}

TEST(FleetEvalTest, FaultsShorterThanTheGateAreAnError) {
  FleetEvalOptions o = FleetEvalOptions::Quick();
  o.max_fault_s = 40;  // < T_c + w = 48: no must-alarm fault could be detected
  const Result<nlohmann::json> r = RunFleetEval(o, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("max_fault_s"), std::string::npos);
}

TEST(FleetEvalTest, UnknownDetectorIsAnError) {
  FleetEvalOptions o = FleetEvalOptions::Quick();
  o.detectors = {"nope"};
  EXPECT_FALSE(RunFleetEval(o, nullptr).ok());
}

}  // namespace
}  // namespace loom::monitor
