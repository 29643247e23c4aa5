// Run-time choice among the IntKernels implementations. Baseline code: it must run on any x86-64
// CPU (and elsewhere), so it only asks the CPU what it has and hands out tables.
#include "loom/compress/kernels/int_kernels.h"

#include <string>

#include "loom/base/logging.h"
#include "loom/compress/kernels/int_kernels_internal.h"

namespace loom::compress {
namespace {

struct Candidate {
  const char* name;
  const IntKernels* (*table)();
};

// Increasing width; "scalar" is handled apart.
constexpr Candidate kSimd[] = {{"avx2", &Avx2IntKernels}, {"avx512", &Avx512IntKernels}};

// The CPU features `name` needs that this machine lacks ("" when it has them all). GCC's and
// clang's __builtin_cpu_supports also check that the OS saves the AVX/AVX-512 registers.
std::string MissingFeatures(std::string_view name) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  std::string missing;
  auto need = [&](bool has, const char* feature) {
    if (!has) missing += std::string(missing.empty() ? "" : ", ") + feature;
  };
  if (name == "avx2") {
    need(__builtin_cpu_supports("avx2"), "avx2");
    need(__builtin_cpu_supports("fma"), "fma");
  } else if (name == "avx512") {
    need(__builtin_cpu_supports("avx512f"), "avx512f");
    need(__builtin_cpu_supports("avx512bw"), "avx512bw");
    need(__builtin_cpu_supports("avx512vl"), "avx512vl");
    need(__builtin_cpu_supports("avx512dq"), "avx512dq");
  }
  return missing;
#else
  return "x86-64";
#endif
}

std::string AvailableNames() {
  std::string names;
  for (const IntKernels* k : AvailableIntKernels()) {
    names += std::string(names.empty() ? "" : ", ") + k->name;
  }
  return names;
}

}  // namespace

std::vector<const IntKernels*> AvailableIntKernels() {
  std::vector<const IntKernels*> out = {&ScalarIntKernels()};
  for (const Candidate& c : kSimd) {
    if (c.table() != nullptr && MissingFeatures(c.name).empty()) out.push_back(c.table());
  }
  return out;
}

Result<const IntKernels*> FindIntKernels(std::string_view name) {
  if (name == "scalar") return &ScalarIntKernels();
  for (const Candidate& c : kSimd) {
    if (name != c.name) continue;
    if (c.table() == nullptr) {
      return FailedPreconditionError("the " + std::string(name) +
                                     " int kernels are not compiled into this (non-x86-64) "
                                     "build; available here: " +
                                     AvailableNames());
    }
    if (std::string missing = MissingFeatures(name); !missing.empty()) {
      return FailedPreconditionError("the " + std::string(name) + " int kernels need " + missing +
                                     ", which this CPU lacks; available here: " + AvailableNames());
    }
    return c.table();
  }
  return InvalidArgumentError("unknown int kernels '" + std::string(name) +
                              "' (scalar, avx2 or avx512); available here: " + AvailableNames());
}

Result<const IntKernels*> ChooseIntKernels(const Env& env) {
  const std::optional<std::string> want = env.Get("LOOM_SIMD");
  if (!want || *want == "auto") return AvailableIntKernels().back();
  Result<const IntKernels*> k = FindIntKernels(*want);
  if (!k.ok()) return k.status().WithContext("LOOM_SIMD=" + *want);
  return k;
}

const IntKernels& SelectIntKernels() {
  static const IntKernels* const kChosen = [] {
    Result<const IntKernels*> k = ChooseIntKernels(Env::Process());
    if (!k.ok()) {
      LOOM_LOG(FATAL, "compress") << k.status().message()
                                  << " (unset LOOM_SIMD to use the best available)";
    }
    return *k;
  }();
  return *kChosen;
}

}  // namespace loom::compress
