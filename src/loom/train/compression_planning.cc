#include "loom/train/compression_planning.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "loom/base/clock.h"
#include "loom/base/philox.h"
#include "loom/compress/codec.h"
#include "loom/compress/planner/espresso.h"
#include "loom/compress/planner/timeline.h"
#include "loom/train/grad_reducer.h"

namespace loom::train {
namespace planner = compress::planner;
namespace {

constexpr int kReps = 3;
// A plan must predict at least this relative gain, or every bucket stays uncompressed: a
// marginal simulated gain does not pay for the compression error (and the model's noise).
constexpr double kMinGain = 0.03;

// Element-wise maximum over ranks.
Status MaxOverRanks(comm::Communicator& comm, std::vector<double>& v, const char* what) {
  return comm.AllReduce(TensorView::Of(v.data(), static_cast<int64_t>(v.size())),
                        comm::ReduceOp::kMax)
      .WithContext(what);
}

// Best of kReps runs of fn, in seconds.
template <typename Fn>
Result<double> BestSeconds(Fn fn) {
  double best = 1e30;
  for (int r = 0; r < kReps; ++r) {
    Stopwatch sw;
    LOOM_RETURN_IF_ERROR(fn());
    best = std::min(best, sw.Seconds());
  }
  return best;
}

// {encode a, encode b, decode a, decode b} of one codec on this rank.
Result<std::vector<double>> TimeCodec(const std::string& spec) {
  LOOM_ASSIGN_OR_RETURN(compress::CodecSpec parsed, compress::ParseCodecSpec(spec));
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<compress::Codec> codec, compress::MakeCodec(parsed));
  std::vector<std::pair<double, double>> enc, dec;
  for (int64_t n : {int64_t{1} << 16, int64_t{1} << 20}) {
    std::vector<float> x(static_cast<size_t>(n)), acc(static_cast<size_t>(n), 0.0f);
    PhiloxStream rng(1, static_cast<uint64_t>(n));
    for (float& v : x) v = rng.NextNormal();
    std::vector<char> wire(static_cast<size_t>(codec->MaxEncodedBytes(n)));
    int64_t bytes = 0;
    LOOM_ASSIGN_OR_RETURN(double te, BestSeconds([&]() -> Status {
      LOOM_ASSIGN_OR_RETURN(bytes, codec->Encode(x.data(), n, wire.data(), {}));
      return OkStatus();
    }));
    LOOM_ASSIGN_OR_RETURN(double td, BestSeconds([&] {
      return codec->DecodeAdd(wire.data(), bytes, n, acc.data());
    }));
    enc.push_back({static_cast<double>(n), te});
    dec.push_back({static_cast<double>(n), td});
  }
  LOOM_ASSIGN_OR_RETURN(planner::LinearCost e, planner::FitLinear(enc));
  LOOM_ASSIGN_OR_RETURN(planner::LinearCost d, planner::FitLinear(dec));
  return std::vector<double>{e.a_s, e.b_s, d.a_s, d.b_s};
}

// {alpha, beta} of the link: all-reduce times at two sizes, t = 2 alpha + beta 2(P-1)/P bytes.
Result<std::vector<double>> TimeLink(comm::Communicator& comm) {
  const double P = comm.size(), ring = 2.0 * (P - 1) / P;
  std::vector<double> t;
  const std::vector<int64_t> sizes = {1 << 18, 1 << 22};  // 1 and 16 MiB: above scheduling noise
  for (int64_t n : sizes) {
    std::vector<float> buf(static_cast<size_t>(n), 1.0f);
    LOOM_RETURN_IF_ERROR(comm.Barrier().WithContext("link probe"));
    LOOM_ASSIGN_OR_RETURN(double s, BestSeconds([&] {
      return comm.AllReduce(TensorView::Of(buf.data(), n), comm::ReduceOp::kSum)
          .WithContext("link probe");
    }));
    t.push_back(s);
  }
  const double b1 = 4.0 * sizes[0], b2 = 4.0 * sizes[1];
  const double beta = std::max(1e-12, (t[1] - t[0]) / (ring * (b2 - b1)));
  const double alpha = std::max(0.0, (t[0] - beta * ring * b1) / 2);
  return std::vector<double>{alpha, beta};
}

}  // namespace

std::string PlanTensorName(int bucket) { return "bucket " + std::to_string(bucket); }

Result<planner::CostModel> MeasureCostModel(comm::Communicator& comm,
                                            const std::vector<std::string>& candidates,
                                            bool reduce_scatter) {
  planner::CostModel m;
  m.world_size = comm.size();
  m.collective =
      reduce_scatter ? planner::GradCollective::kReduceScatter : planner::GradCollective::kAllReduce;
  std::vector<std::string> specs = {"none"};
  for (const std::string& c : candidates) {
    if (c != "none") specs.push_back(c);
  }
  std::vector<double> v;  // per codec 4 numbers, then alpha and beta
  for (size_t i = 1; i < specs.size(); ++i) {
    LOOM_ASSIGN_OR_RETURN(std::vector<double> t, TimeCodec(specs[i]));
    v.insert(v.end(), t.begin(), t.end());
  }
  LOOM_ASSIGN_OR_RETURN(std::vector<double> link, TimeLink(comm));
  v.insert(v.end(), link.begin(), link.end());
  LOOM_RETURN_IF_ERROR(MaxOverRanks(comm, v, "cost model"));
  LOOM_ASSIGN_OR_RETURN(planner::CodecCost none, planner::CodecCostFor("none", {}, {}));
  m.codecs.push_back(none);
  for (size_t i = 1; i < specs.size(); ++i) {
    const double* t = v.data() + 4 * (i - 1);
    LOOM_ASSIGN_OR_RETURN(planner::CodecCost c,
                          planner::CodecCostFor(specs[i], {t[0], t[1]}, {t[2], t[3]}));
    m.codecs.push_back(c);
  }
  m.links = {planner::LinkModel{"dp", v[v.size() - 2], v.back()}};
  LOOM_RETURN_IF_ERROR(m.Validate());
  return m;
}

Result<planner::BackwardProfile> AgreeOnProfile(comm::Communicator& comm,
                                                const nn::FlatLayout& layout,
                                                std::vector<double> ready_s,
                                                double backward_end_s) {
  for (double& r : ready_s) {
    if (r < 0) r = backward_end_s;
  }
  ready_s.push_back(backward_end_s);
  LOOM_RETURN_IF_ERROR(MaxOverRanks(comm, ready_s, "bucket profile"));
  planner::BackwardProfile p;
  double t = 0;
  for (size_t i = 0; i + 1 < ready_s.size(); ++i) {
    t = std::max(t, ready_s[i]);  // launches are in bucket order: keep the times monotone
    p.tensors.push_back({PlanTensorName(static_cast<int>(i)), layout.buckets()[i].size(), t});
  }
  p.compute_end_s = std::max(t, ready_s.back());
  return p;
}

Result<planner::CompressionPlan> PlanAndBroadcast(comm::Communicator& comm,
                                                  const planner::BackwardProfile& profile,
                                                  const planner::CostModel& model) {
  std::string text;
  if (comm.rank() == 0) {
    LOOM_ASSIGN_OR_RETURN(planner::TimelineSimulator sim,
                          planner::TimelineSimulator::Create(profile, model));
    planner::EspressoOptions options;
    options.placements = {planner::Placement::kLink};  // GradReducer's communication thread
    LOOM_ASSIGN_OR_RETURN(planner::PlanReport r, planner::EspressoPlan(sim, options));
    if (r.plan_s > (1.0 - kMinGain) * r.uncompressed_s) {  // not worth the error: stay exact
      r.plan.assign(r.plan.size(), planner::TensorStrategy{});
      r.plan_s = r.uncompressed_s;
    }
    LOOM_ASSIGN_OR_RETURN(planner::CompressionPlan plan,
                          planner::MakeCompressionPlan(sim, r.plan, r.plan_s, r.uncompressed_s));
    text = planner::CompressionPlanToJson(plan);
  }
  int64_t len = static_cast<int64_t>(text.size());
  LOOM_RETURN_IF_ERROR(comm.Broadcast(TensorView::Of(&len, 1), 0).WithContext("plan"));
  text.resize(static_cast<size_t>(len));
  LOOM_RETURN_IF_ERROR(
      comm.Broadcast(TensorView(text.data(), DType::kU8, {len}), 0).WithContext("plan"));
  return planner::CompressionPlanFromJson(text, "the broadcast plan");
}

BucketPlanner::BucketPlanner(const TrainConfig& cfg, comm::Communicator* comm,
                             const nn::FlatLayout* layout, std::string run_dir, std::ostream* log)
    : cfg_(cfg), comm_(comm), layout_(layout), run_dir_(std::move(run_dir)), log_(log) {}

BucketPlanner::~BucketPlanner() = default;

Status BucketPlanner::Start(GradReducer& reducer) {
  if (!enabled() || cfg_.compress.plan == "auto") return OkStatus();
  LOOM_ASSIGN_OR_RETURN(planner::CompressionPlan plan,
                        planner::LoadCompressionPlan(cfg_.compress.plan));
  std::vector<planner::TensorInfo> tensors;
  for (size_t i = 0; i < layout_->buckets().size(); ++i) {
    tensors.push_back({PlanTensorName(static_cast<int>(i)), layout_->buckets()[i].size(), 0});
  }
  LOOM_RETURN_IF_ERROR(planner::CheckPlanMatches(plan, tensors, comm_->size())
                           .WithContext("compress.plan=" + cfg_.compress.plan));
  return Apply(plan, reducer);
}

Status BucketPlanner::AfterStep(int64_t step, GradReducer& reducer) {
  if (cfg_.compress.plan != "auto" || step + 1 != cfg_.compress.warmup_steps) return OkStatus();
  Stopwatch sw;
  LOOM_ASSIGN_OR_RETURN(planner::BackwardProfile profile,
                        AgreeOnProfile(*comm_, *layout_, reducer.last_ready_seconds(),
                                       reducer.last_backward_end_seconds()));
  LOOM_ASSIGN_OR_RETURN(planner::CostModel model,
                        MeasureCostModel(*comm_, cfg_.compress.PlanCodecList(),
                                         cfg_.ResolvedDpMode() == DpMode::kZero1));
  LOOM_ASSIGN_OR_RETURN(planner::CompressionPlan plan, PlanAndBroadcast(*comm_, profile, model));
  if (log_ != nullptr) {
    LOOM_RETURN_IF_ERROR(planner::SaveCompressionPlan(run_dir_ + "/compress_plan.json", plan));
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "compress.plan=auto after step %lld (%.2f s): link %.0f us + %.2f ns/byte; "
                  "predicted %.3f s per backward+reduce vs %.3f s uncompressed; "
                  "%s/compress_plan.json\n",
                  (long long)(step + 1), sw.Seconds(), model.links[0].alpha_s * 1e6,
                  model.links[0].beta_s_per_byte * 1e9, plan.predicted_iteration_s,
                  plan.baseline_uncompressed_s, run_dir_.c_str());
    *log_ << buf;
  }
  return Apply(plan, reducer);
}

Status BucketPlanner::Apply(const planner::CompressionPlan& plan, GradReducer& reducer) {
  codecs_.clear();
  std::vector<const compress::Codec*> per_bucket;
  std::map<std::string, int> counts;
  for (const planner::PlannedTensor& t : plan.tensors) {
    ++counts[t.codec];
    LOOM_ASSIGN_OR_RETURN(compress::CodecSpec spec, compress::ParseCodecSpec(t.codec));
    if (spec.kind == compress::CodecKind::kNone) {
      per_bucket.push_back(nullptr);
      continue;
    }
    LOOM_ASSIGN_OR_RETURN(std::unique_ptr<compress::Codec> codec, compress::MakeCodec(spec));
    per_bucket.push_back(codec.get());
    codecs_.push_back(std::move(codec));
  }
  reducer.SetBucketCodecs(per_bucket);
  if (log_ != nullptr) {
    *log_ << "compress.plan: " << plan.tensors.size() << " buckets:";
    for (const auto& [codec, n] : counts) *log_ << " " << n << " x " << codec;
    *log_ << "\n" << std::flush;
  }
  return OkStatus();
}

}  // namespace loom::train
