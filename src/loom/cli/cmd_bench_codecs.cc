// `loom bench codecs`: every compression codec on Gaussian and heavy-tailed (Student-t, nu = 3)
// data: encode, decode and decode-add throughput (fp32 bytes per second), bits per element and
// relative error, next to memcpy and y += x measured in the same run (the roofline).
// Single thread; repetitions interleave the arms; medians reported.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/cli/bench_report.h"
#include "loom/cli/commands.h"
#include "loom/compress/codec.h"

namespace loom::cli {
namespace {

struct BenchCodecsArgs {
  std::string codecs =
      "bf16,fp16,int8:g128,int8:g128:nearest,int4:g128,int4:g128:nearest,int4:g128:hadamard,"
      "int2:g128,sign,topk:0.01,randk:0.01,qsgd:s16,qsgd:s4";
  int min_log2 = 16;
  int max_log2 = 24;
  int reps = 5;
  std::string json;
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<float> Data(int64_t n, bool heavy, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  if (heavy) {
    std::student_t_distribution<float> d(3.0f);
    for (float& x : v) x = d(rng);
  } else {
    std::normal_distribution<float> d;
    for (float& x : v) x = d(rng);
  }
  return v;
}

int Run(const BenchCodecsArgs& a) {
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "loom bench codecs: %s\n", s.ToString().c_str());
    return kExitFailure;
  };
  std::vector<std::unique_ptr<compress::Codec>> codecs;
  for (const std::string& spec : Split(a.codecs)) {
    auto s = compress::ParseCodecSpec(spec);
    if (!s.ok()) return fail(s.status());
    auto c = compress::MakeCodec(*s);
    if (!c.ok()) return fail(c.status());
    codecs.push_back(std::move(*c));
  }
  nlohmann::json config = {{"codecs", a.codecs}, {"min_log2", a.min_log2},
                           {"max_log2", a.max_log2}, {"reps", a.reps}, {"threads", 1}};
  PrintBenchHeader("codecs", config);
  std::printf("\n%-30s %-6s %9s %9s %9s %9s %7s %9s\n", "codec", "data", "elements", "enc GB/s",
              "dec GB/s", "dadd GB/s", "bits/el", "rel err");
  nlohmann::json results = nlohmann::json::array();
  std::map<std::string, std::vector<double>> enc_ratio, dadd_ratio;
  for (int lg = a.min_log2; lg <= a.max_log2; lg += 2) {
    const int64_t n = int64_t{1} << lg;
    const double bytes = 4.0 * static_cast<double>(n);
    for (const bool heavy : {false, true}) {
      const std::vector<float> x = Data(n, heavy, static_cast<uint32_t>(lg));
      std::vector<float> y(x.size()), acc(x.size(), 0.f);
      std::vector<double> t_memcpy, t_axpy;
      std::map<size_t, std::vector<double>> t_enc, t_dec, t_dadd;
      std::vector<std::vector<char>> wire(codecs.size());
      std::vector<int64_t> used(codecs.size());
      for (size_t c = 0; c < codecs.size(); ++c) wire[c].resize(codecs[c]->MaxEncodedBytes(n));
      for (int rep = 0; rep < a.reps; ++rep) {  // arms interleaved within each repetition
        double t = Now();
        std::memcpy(y.data(), x.data(), static_cast<size_t>(bytes));
        t_memcpy.push_back(Now() - t);
        t = Now();
        for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
        t_axpy.push_back(Now() - t);
        for (size_t c = 0; c < codecs.size(); ++c) {
          t = Now();
          auto b = codecs[c]->Encode(x.data(), n, wire[c].data(), {1, rep, 0, 0});
          t_enc[c].push_back(Now() - t);
          if (!b.ok()) return fail(b.status());
          used[c] = *b;
          t = Now();
          Status s = codecs[c]->Decode(wire[c].data(), used[c], n, y.data());
          t_dec[c].push_back(Now() - t);
          t = Now();
          if (s.ok()) s = codecs[c]->DecodeAdd(wire[c].data(), used[c], n, acc.data());
          t_dadd[c].push_back(Now() - t);
          if (!s.ok()) return fail(s);
        }
      }
      const double memcpy_gbs = bytes / Summarize(t_memcpy).median / 1e9;
      const double axpy_gbs = bytes / Summarize(t_axpy).median / 1e9;
      const char* dist = heavy ? "t(3)" : "gauss";
      std::printf("%-30s %-6s %9lld %9.2f %9s %9.2f %7s %9s\n", "memcpy / y+=x (roofline)", dist,
                  static_cast<long long>(n), memcpy_gbs, "-", axpy_gbs, "32", "0");
      for (size_t c = 0; c < codecs.size(); ++c) {
        // Error of one round trip, relative to the data's L2 norm.
        (void)codecs[c]->Decode(wire[c].data(), used[c], n, y.data());
        double num = 0, den = 0;
        for (int64_t i = 0; i < n; ++i) {
          num += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
          den += static_cast<double>(x[i]) * x[i];
        }
        const double rel = std::sqrt(num / den);
        const double enc = bytes / Summarize(t_enc[c]).median / 1e9;
        const double dec = bytes / Summarize(t_dec[c]).median / 1e9;
        const double dadd = bytes / Summarize(t_dadd[c]).median / 1e9;
        const double bits = 8.0 * static_cast<double>(used[c] - compress::kHeaderBytes) / n;
        const std::string name = codecs[c]->spec().ToString();
        std::printf("%-30s %-6s %9lld %9.2f %9.2f %9.2f %7.3f %9.2e\n", name.c_str(), dist,
                    static_cast<long long>(n), enc, dec, dadd, bits, rel);
        enc_ratio[name].push_back(enc / memcpy_gbs);
        dadd_ratio[name].push_back(dadd / memcpy_gbs);
        results.push_back({{"codec", name}, {"data", dist}, {"elements", n},
                           {"encode_gbs", enc}, {"decode_gbs", dec}, {"decode_add_gbs", dadd},
                           {"bits_per_element", bits}, {"relative_error", rel},
                           {"memcpy_gbs", memcpy_gbs}, {"axpy_gbs", axpy_gbs}});
      }
    }
  }
  auto med = [](std::vector<double> v) { return Summarize(std::move(v)).median; };
  nlohmann::json summary = nlohmann::json::object();
  auto put = [&](const char* key, const std::map<std::string, std::vector<double>>& m,
                 const std::string& codec) {
    if (m.count(codec)) summary[key] = med(m.at(codec));
  };
  put("int4_encode_vs_memcpy", enc_ratio, "int4:g128:stochastic");
  put("int4_decode_add_vs_memcpy", dadd_ratio, "int4:g128:stochastic");
  put("int8_encode_vs_memcpy", enc_ratio, "int8:g128:stochastic");
  std::printf("\nmedian over sizes and data, as a fraction of memcpy: %s\n", summary.dump().c_str());
  std::printf("targets (issue #3, AVX-512): encode >= 0.7x memcpy, decode-add >= 1.0x\n");
  if (!a.json.empty()) {
    if (Status s = WriteBenchJson(a.json, "codecs", config, summary, results); !s.ok()) {
      return fail(s);
    }
    std::printf("wrote %s\n", a.json.c_str());
  }
  return 0;
}

}  // namespace

void RegisterBenchCodecs(CLI::App& bench, CliContext* ctx) {
  auto* cmd = bench.add_subcommand("codecs", "compression codecs: throughput, bits, error");
  auto a = std::make_shared<BenchCodecsArgs>();
  cmd->add_option("--codecs", a->codecs, "comma-separated codec specs");
  cmd->add_option("--min-log2", a->min_log2, "smallest size, log2 elements")->check(CLI::Range(4, 30));
  cmd->add_option("--max-log2", a->max_log2, "largest size, log2 elements")->check(CLI::Range(4, 30));
  cmd->add_option("--reps", a->reps, "repetitions (arms interleaved)");
  cmd->add_option("--json", a->json, "write results as JSON");
  cmd->callback([a, ctx] { ctx->exit_code = Run(*a); });
}

}  // namespace loom::cli
