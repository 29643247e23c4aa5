#include "loom/ckpt/tools.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "loom/ckpt/checkpointer.h"

namespace loom::ckpt {

using nlohmann::json;

Result<std::vector<TensorDiff>> CompareCheckpoints(Storage& storage, const CheckpointSource& a,
                                                   const CheckpointSource& b, double atol,
                                                   bool objects) {
  std::vector<TensorDiff> out;
  for (const auto& [name, ta] : a.meta.tensors) {
    auto it = b.meta.tensors.find(name);
    if (it == b.meta.tensors.end()) {
      out.push_back({name, "only in A"});
      continue;
    }
    const TensorMeta& tb = it->second;
    if (ta.dtype != tb.dtype) {
      out.push_back({name, "dtype " + std::string(DTypeName(ta.dtype)) + " vs " +
                               std::string(DTypeName(tb.dtype))});
      continue;
    }
    if (ta.shape != tb.shape) {
      out.push_back({name, "shape " + FullBox(ta.shape).DebugString() + " vs " +
                               FullBox(tb.shape).DebugString()});
      continue;
    }
    std::vector<char> va, vb;
    LOOM_RETURN_IF_ERROR(ReadFullTensor(storage, a, name, &va));
    LOOM_RETURN_IF_ERROR(ReadFullTensor(storage, b, name, &vb));
    TensorDiff d{name, ""};
    const int64_t n = NumElements(ta.shape);
    const int64_t esize = DTypeBits(ta.dtype) / 8;
    for (int64_t i = 0; i < n; ++i) {
      const bool same_bits = std::memcmp(va.data() + i * esize, vb.data() + i * esize, esize) == 0;
      if (same_bits) continue;
      const double x = LoadAsDouble(ta.dtype, va.data(), i);
      const double y = LoadAsDouble(ta.dtype, vb.data(), i);
      // atol 0: bit-exact (-0.0 differs from +0.0); else |x - y| <= atol, equal infinities equal.
      const double diff = x == y ? 0 : std::fabs(x - y);
      if (atol == 0 || !(diff <= atol)) {
        ++d.differing;
        d.max_abs_diff = std::isnan(diff) ? NAN : std::max(d.max_abs_diff, diff);
      }
    }
    if (d.differing > 0) d.problem = "values";
    out.push_back(std::move(d));
  }
  for (const auto& [name, tb] : b.meta.tensors) {
    if (!a.meta.tensors.count(name)) out.push_back({name, "only in B"});
  }
  for (const auto& [key, list] : a.meta.objects) {
    if (!objects) break;
    auto oa = ReadObject(storage, a, key, -1);
    auto ob = ReadObject(storage, b, key, -1);
    if (!oa.ok() || !ob.ok()) continue;  // per-rank objects: not comparable across layouts
    out.push_back({"object:" + key, *oa == *ob ? "" : "values"});
  }
  return out;
}

Result<std::string> ImportAsCheckpoint(Storage& storage, const CheckpointSource& src,
                                       const std::string& root, int64_t step) {
  std::vector<std::vector<char>> buffers;
  StateDict d;
  for (const auto& [name, t] : src.meta.tensors) {
    std::vector<char> buf;
    LOOM_RETURN_IF_ERROR(ReadFullTensor(storage, src, name, &buf));
    buffers.push_back(std::move(buf));
    d.AddFull(name, t.dtype, t.shape, buffers.back().data(), false);
  }
  Checkpointer ckpt(&storage, root, nullptr);
  SaveOptions opts;
  opts.async = false;
  opts.producer = "loom ckpt import";
  opts.user = src.meta.user;
  LOOM_RETURN_IF_ERROR(ckpt.Save(step, d, opts).status());
  return JoinPath(root, StepDirName(step));
}

Result<std::vector<StageSummary>> SummarizeTelemetry(const std::string& root) {
  const std::string dir = JoinPath(root, "telemetry");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return NotFoundError(dir + " does not exist (no save has written telemetry there)");
  }
  struct Sample {
    int rank;
    double seconds;
    int64_t bytes;
  };
  std::map<std::pair<int64_t, std::string>, std::vector<Sample>> by_stage;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".jsonl") continue;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded()) continue;  // a line cut by a crash
      try {
        by_stage[{j.at("step").get<int64_t>(), j.at("stage").get<std::string>()}].push_back(
            {j.at("rank").get<int>(), j.at("t_end").get<double>() - j.at("t_start").get<double>(),
             j.at("bytes").get<int64_t>()});
      } catch (const json::exception&) {
        continue;
      }
    }
  }
  std::vector<StageSummary> out;
  for (auto& [key, samples] : by_stage) {
    StageSummary s;
    s.step = key.first;
    s.stage = key.second;
    s.ranks = static_cast<int>(samples.size());
    std::vector<double> t;
    for (const Sample& x : samples) {
      t.push_back(x.seconds);
      s.bytes += x.bytes;
    }
    std::sort(t.begin(), t.end());
    s.min_s = t.front();
    s.max_s = t.back();
    s.median_s = (t[(t.size() - 1) / 2] + t[t.size() / 2]) / 2;
    std::vector<double> dev;
    for (double v : t) dev.push_back(std::fabs(v - s.median_s));
    std::sort(dev.begin(), dev.end());
    const double mad = (dev[(dev.size() - 1) / 2] + dev[dev.size() / 2]) / 2;
    const double limit = s.median_s + std::max({3 * mad, 0.1 * s.median_s, 0.005});
    for (const Sample& x : samples) {
      if (samples.size() > 1 && x.seconds > limit) s.slow_ranks.push_back(x.rank);
    }
    std::sort(s.slow_ranks.begin(), s.slow_ranks.end());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace loom::ckpt
