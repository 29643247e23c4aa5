// Strategy <-> ModelSpec, codec lookup and single-strategy prediction.
#include <cstdio>
#include <filesystem>

#include "loom/trace/optimize/optimizer.h"
#include "loom/trace/whatif/whatif.h"

namespace loom::trace::optimize {
namespace {

std::string HumanBytes(int64_t b) {
  char buf[32];
  if (b >= (1 << 20)) {
    std::snprintf(buf, sizeof(buf), "%.3g MiB", static_cast<double>(b) / (1 << 20));
  } else if (b >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.3g KiB", static_cast<double>(b) / 1024);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(b));
  }
  return buf;
}

int BucketEnd(const std::vector<int>& begin, int b, int n) {
  return b + 1 < static_cast<int>(begin.size()) ? begin[b + 1] : n;
}

// Index of the base bucket with exactly the range [lo, hi), or -1.
int SameBaseBucket(const dfg::ModelSpec& base, int lo, int hi) {
  const int n = static_cast<int>(base.grads.size());
  for (int b = 0; b < base.num_buckets(); ++b) {
    if (base.bucket_begin[b] == lo && BucketEnd(base.bucket_begin, b, n) == hi) return b;
  }
  return -1;
}

}  // namespace

Strategy Strategy::FromSpec(const dfg::ModelSpec& spec) {
  Strategy s;
  s.bucket_begin = spec.bucket_begin;
  s.codecs.assign(spec.num_buckets(), "none");
  for (size_t b = 0; b < spec.bucket_codec.size() && b < s.codecs.size(); ++b) {
    s.codecs[b] = spec.bucket_codec[b].name;
  }
  s.overlap = spec.overlap;
  return s;
}

std::vector<int64_t> Strategy::BucketBytes(const dfg::ModelSpec& base) const {
  const int n = static_cast<int>(base.grads.size());
  std::vector<int64_t> out;
  for (int b = 0; b < num_buckets(); ++b) {
    int64_t sum = 0;
    for (int i = bucket_begin[b]; i < BucketEnd(bucket_begin, b, n) && i < n; ++i) {
      sum += base.grads[i].bytes;
    }
    out.push_back(sum);
  }
  return out;
}

std::string Strategy::Describe(const dfg::ModelSpec& base) const {
  std::string s = std::to_string(num_buckets()) + (num_buckets() == 1 ? " bucket [" : " buckets [");
  // Long lists keep their first 6 and last 3 entries.
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t b = 0; b < v.size(); ++b) {
      if (v.size() > 12 && b == 6) {
        out += ", ... " + std::to_string(v.size() - 9) + " more";
        b = v.size() - 4;
        continue;
      }
      out += (b ? ", " : "") + v[b];
    }
    return out;
  };
  std::vector<std::string> sizes;
  for (int64_t b : BucketBytes(base)) sizes.push_back(HumanBytes(b));
  s += list(sizes) + "], ";
  bool uniform = true;
  for (const std::string& c : codecs) uniform = uniform && c == codecs[0];
  s += uniform && !codecs.empty() ? "codec " + codecs[0] : "codecs [" + list(codecs) + "]";
  return s + ", overlap " + (overlap ? "on" : "off");
}

Result<CodecTable> CodecTable::Load(const std::vector<std::string>& names,
                                    const std::string& bench_json) {
  CodecTable t;
  std::error_code ec;
  if (!bench_json.empty() && !std::filesystem::is_regular_file(bench_json, ec)) {
    return NotFoundError("codec bench file '" + bench_json + "' does not exist");
  }
  for (const std::string& name : names) {
    if (name == "none") continue;
    Result<dfg::CodecModel> c = whatif::DefaultCodec(name);
    if (!bench_json.empty() && c.ok()) {
      Result<dfg::CodecModel> fitted = whatif::CodecFromBenchJson(bench_json, name);
      if (fitted.ok()) {
        c = fitted;
      } else if (fitted.status().code() != StatusCode::kNotFound) {
        return fitted.status();
      }
    }
    if (!c.ok()) {
      // Not a default codec: only a bench file can describe it.
      if (bench_json.empty()) return c.status();
      c = whatif::CodecFromBenchJson(bench_json, name);
      if (!c.ok()) return c.status();
    }
    t.models.push_back(*c);
  }
  return t;
}

const dfg::CodecModel* CodecTable::Find(const std::string& name) const {
  for (const dfg::CodecModel& c : models) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

Result<dfg::ModelSpec> ApplyStrategy(const dfg::ModelSpec& base, const Strategy& s,
                                     const CodecTable& codecs) {
  const int n = static_cast<int>(base.grads.size());
  if (s.bucket_begin.empty() || s.bucket_begin[0] != 0) {
    return InvalidArgumentError("strategy: bucket boundaries must start at gradient 0");
  }
  for (int b = 1; b < s.num_buckets(); ++b) {
    if (s.bucket_begin[b] <= s.bucket_begin[b - 1] || s.bucket_begin[b] >= n) {
      return InvalidArgumentError("strategy: bucket " + std::to_string(b) + " starts at gradient " +
                                  std::to_string(s.bucket_begin[b]) +
                                  ": boundaries must increase within the " + std::to_string(n) +
                                  " gradients");
    }
  }
  if (static_cast<int>(s.codecs.size()) != s.num_buckets()) {
    return InvalidArgumentError("strategy: " + std::to_string(s.codecs.size()) + " codecs for " +
                                std::to_string(s.num_buckets()) + " buckets");
  }
  dfg::ModelSpec spec = base;
  spec.bucket_begin = s.bucket_begin;
  whatif::RegroupPerBucketGathers(&spec, base.bucket_begin);
  spec.overlap = s.overlap;
  // Per-bucket measured Sync/finish survive for buckets the strategy keeps unchanged.
  for (int r = 0; r < spec.world_size; ++r) {
    const dfg::RankModel& old = base.ranks[r];
    dfg::RankModel& m = spec.ranks[r];
    m.bucket_sync_ns.clear();
    m.bucket_finish_ns.clear();
    for (int b = 0; b < s.num_buckets(); ++b) {
      const int same = SameBaseBucket(base, s.bucket_begin[b], BucketEnd(s.bucket_begin, b, n));
      m.bucket_sync_ns.push_back(same >= 0 ? old.BucketSync(same, base.sync_ns) : base.sync_ns);
      m.bucket_finish_ns.push_back(
          same >= 0 ? dfg::RankModel::At(old.bucket_finish_ns, same) : 0.0);
    }
  }
  spec.bucket_codec.clear();
  bool any = false;
  for (const std::string& name : s.codecs) any |= name != "none";
  if (any) {
    for (const std::string& name : s.codecs) {
      const dfg::CodecModel* c = codecs.Find(name);
      dfg::CodecModel model;
      if (c != nullptr) {
        model = *c;
      } else {
        bool found = false;
        for (const dfg::CodecModel& own : base.bucket_codec) {
          if (own.name == name) {
            model = own;
            found = true;
            break;
          }
        }
        if (!found) {
          LOOM_ASSIGN_OR_RETURN(model, whatif::DefaultCodec(name));
        }
      }
      spec.bucket_codec.push_back(model);
    }
  }
  LOOM_RETURN_IF_ERROR(spec.Validate());
  return spec;
}

Result<double> PredictStrategy(const dfg::ModelSpec& base, const Strategy& s,
                               const CodecTable& codecs,
                               const replay::ReplayOptions& replay_options) {
  LOOM_ASSIGN_OR_RETURN(dfg::ModelSpec spec, ApplyStrategy(base, s, codecs));
  LOOM_ASSIGN_OR_RETURN(dfg::Graph g, dfg::BuildGraph(spec));
  LOOM_ASSIGN_OR_RETURN(replay::ReplayResult r, replay::Replay(g, replay_options));
  return r.iteration_ns;
}

}  // namespace loom::trace::optimize
