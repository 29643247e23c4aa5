#include "loom/comm/gloo/gloo_native.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>

#include <cstring>

#include "loom/comm/gloo/gloo_transport_internal.h"

namespace loom::comm {
namespace {

using internal::GlooTransport;

Status Guard(const char* what, const std::function<void()>& fn) {
  try {
    fn();
    return OkStatus();
  } catch (const std::exception& e) {
    return UnavailableError(std::string("gloo ") + what + " failed: " + e.what());
  }
}

class NewApiAllreduce final : public GlooNativeCollective {
 public:
  NewApiAllreduce(std::shared_ptr<gloo::Context> ctx, gloo::AllreduceOptions::Algorithm algo,
                  float* in, float* out, size_t n)
      : ctx_(std::move(ctx)), algo_(algo), in_(in), out_(out), n_(n) {}
  Status Run() override {
    return Guard("allreduce", [&] {
      gloo::AllreduceOptions opts(ctx_);
      opts.setAlgorithm(algo_);
      if (in_ != out_) std::memcpy(out_, in_, n_ * sizeof(float));
      opts.setOutput(out_, n_);
      void (*fn)(void*, const void*, const void*, size_t) = &gloo::sum<float>;
      opts.setReduceFunction(fn);
      opts.setTag(7);
      gloo::allreduce(opts);
    });
  }

 private:
  std::shared_ptr<gloo::Context> ctx_;
  gloo::AllreduceOptions::Algorithm algo_;
  float* in_;
  float* out_;
  size_t n_;
};

class ClassicAlgorithm final : public GlooNativeCollective {
 public:
  ClassicAlgorithm(std::unique_ptr<gloo::Algorithm> algo, float* in, float* out, size_t n)
      : algo_(std::move(algo)), in_(in), out_(out), n_(n) {}
  Status Run() override {
    return Guard("algorithm", [&] {
      if (in_ != out_) std::memcpy(out_, in_, n_ * sizeof(float));
      algo_->run();
    });
  }

 private:
  std::unique_ptr<gloo::Algorithm> algo_;
  float* in_;
  float* out_;
  size_t n_;
};

class ReduceScatterHd final : public GlooNativeCollective {
 public:
  ReduceScatterHd(std::shared_ptr<gloo::Context> ctx, float* in, float* out, size_t n)
      : work_(n), out_(out), in_(in), n_(n), P_(ctx->size) {
    std::vector<int> recv(P_, static_cast<int>(n / P_));
    algo_ = std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
        ctx, std::vector<float*>{work_.data()}, static_cast<int>(n), recv);
  }
  Status Run() override {
    return Guard("reduce_scatter", [&] {
      std::memcpy(work_.data(), in_, n_ * sizeof(float));
      algo_->run();
      // Gloo's distribution phase moves rank r's reduced block to the START of the buffer
      // (halving-doubling leaves the blocks in bit-reversed rank order before that; reading
      // block r in place was right only on rank 0 and the ranks whose bits read the same
      // reversed, so 3- and 4-rank benchmarks compared against wrong results).
      std::memcpy(out_, work_.data(), (n_ / P_) * sizeof(float));
    });
  }

 private:
  std::vector<float> work_;
  float* out_;
  float* in_;
  size_t n_;
  int P_;
  std::unique_ptr<gloo::Algorithm> algo_;
};

class AllgatherRing final : public GlooNativeCollective {
 public:
  AllgatherRing(std::shared_ptr<gloo::Context> ctx, float* in, float* out, size_t n)
      : ctx_(std::move(ctx)), in_(in), out_(out), n_(n) {}
  Status Run() override {
    return Guard("allgather", [&] {
      gloo::AllgatherOptions opts(ctx_);
      opts.setInput(in_, n_ / ctx_->size);
      opts.setOutput(out_, n_);
      opts.setTag(8);
      gloo::allgather(opts);
    });
  }

 private:
  std::shared_ptr<gloo::Context> ctx_;
  float* in_;
  float* out_;
  size_t n_;
};

}  // namespace

std::vector<std::string_view> GlooNativeCollective::Algorithms() {
  return {"allreduce_ring", "allreduce_bcube", "allreduce_ring_chunked",
          "allreduce_halving_doubling", "reduce_scatter_halving_doubling", "allgather_ring"};
}

Result<std::unique_ptr<GlooNativeCollective>> GlooNativeCollective::Create(
    Communicator& comm, std::string_view algorithm, float* in, float* out, size_t count) {
  auto* gt = dynamic_cast<GlooTransport*>(comm.transport());
  if (gt == nullptr) {
    return InvalidArgumentError("Gloo's native algorithms need the gloo backend, not " +
                                std::string(comm.backend()));
  }
  const auto& ctx = gt->context();
  const size_t P = static_cast<size_t>(ctx->size);
  std::unique_ptr<GlooNativeCollective> out_algo;
  Status s = Guard("setup", [&] {
    if (algorithm == "allreduce_ring") {
      out_algo = std::make_unique<NewApiAllreduce>(ctx, gloo::AllreduceOptions::Algorithm::RING,
                                                   in, out, count);
    } else if (algorithm == "allreduce_bcube") {
      out_algo = std::make_unique<NewApiAllreduce>(ctx, gloo::AllreduceOptions::Algorithm::BCUBE,
                                                   in, out, count);
    } else if (algorithm == "allreduce_ring_chunked") {
      out_algo = std::make_unique<ClassicAlgorithm>(
          std::make_unique<gloo::AllreduceRingChunked<float>>(ctx, std::vector<float*>{out},
                                                              static_cast<int>(count)),
          in, out, count);
    } else if (algorithm == "allreduce_halving_doubling") {
      out_algo = std::make_unique<ClassicAlgorithm>(
          std::make_unique<gloo::AllreduceHalvingDoubling<float>>(ctx, std::vector<float*>{out},
                                                                  static_cast<int>(count)),
          in, out, count);
    } else if (algorithm == "reduce_scatter_halving_doubling") {
      out_algo = std::make_unique<ReduceScatterHd>(ctx, in, out, count);
    } else if (algorithm == "allgather_ring") {
      out_algo = std::make_unique<AllgatherRing>(ctx, in, out, count);
    }
  });
  LOOM_RETURN_IF_ERROR(s);
  if (!out_algo) {
    return InvalidArgumentError("unknown Gloo algorithm '" + std::string(algorithm) + "'");
  }
  if (count % P != 0 && (algorithm == "reduce_scatter_halving_doubling" ||
                         algorithm == "allgather_ring")) {
    return InvalidArgumentError("count must be divisible by the world size");
  }
  return out_algo;
}

}  // namespace loom::comm
