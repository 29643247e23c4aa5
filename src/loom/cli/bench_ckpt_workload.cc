#include "loom/cli/bench_ckpt_workload.h"

#include <algorithm>
#include <cmath>

namespace loom::cli {

std::vector<BenchTensor> DenseTensors(int64_t h, int64_t layers) {
  std::vector<BenchTensor> params;
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    params.push_back({p + "qkv.weight", {3 * h, h}, 0});
    params.push_back({p + "o.weight", {h, h}, 1});
    params.push_back({p + "fc1.weight", {4 * h, h}, 0});
    params.push_back({p + "fc2.weight", {h, 4 * h}, 1});
    params.push_back({p + "ln1.weight", {h}, -1});
    params.push_back({p + "ln2.weight", {h}, -1});
  }
  std::vector<BenchTensor> out;
  for (int kind = 0; kind < 3; ++kind) {
    for (const BenchTensor& t : params) {
      BenchTensor s = t;
      s.kind = kind;
      if (kind > 0) s.name = "optim." + t.name + (kind == 1 ? ".exp_avg" : ".exp_avg_sq");
      out.push_back(std::move(s));
    }
  }
  return out;
}

int64_t LayersFor(int64_t h, int64_t total_bytes) {
  const int64_t per_layer = 3 * 4 * (12 * h * h + 2 * h);
  return std::max<int64_t>(1, std::llround(static_cast<double>(total_bytes) / per_layer));
}

namespace {

// Deterministic, distinct per tensor and element, cheap to generate and to check.
float Pattern(size_t tensor, int64_t flat) {
  return static_cast<float>((flat * 2654435761u + tensor * 40503u) & 0xffffff) * 0x1p-12f;
}

ckpt::Box SplitBox(const ckpt::Shape& shape, int dim, int part, int parts) {
  ckpt::Box b = ckpt::FullBox(shape);
  b.off[dim] = shape[dim] * part / parts;
  b.len[dim] = shape[dim] * (part + 1) / parts - b.off[dim];
  return b;
}

}  // namespace

BenchState::BenchState(const std::vector<BenchTensor>& tensors, BenchLayout layout, int rank,
                       int world, bool fill) {
  std::vector<std::pair<size_t, std::variant<ckpt::Box, ckpt::FlatRange>>> regions;
  if (layout == BenchLayout::kFlat) {
    // Per kind: the concatenation of that kind's tensors, cut evenly.
    for (int kind = 0; kind < 3; ++kind) {
      int64_t total = 0;
      for (const BenchTensor& t : tensors) total += t.kind == kind ? ckpt::NumElements(t.shape) : 0;
      const int64_t lo = total * rank / world, hi = total * (rank + 1) / world;
      int64_t at = 0;
      for (size_t i = 0; i < tensors.size(); ++i) {
        if (tensors[i].kind != kind) continue;
        const int64_t n = ckpt::NumElements(tensors[i].shape);
        const int64_t a = std::max(lo, at), e = std::min(hi, at + n);
        if (a < e) regions.push_back({i, ckpt::FlatRange{a - at, e - at}});
        at += n;
      }
    }
  } else {
    for (size_t i = 0; i < tensors.size(); ++i) {
      const BenchTensor& t = tensors[i];
      if (layout == BenchLayout::kFull || t.split < 0) {
        regions.push_back({i, ckpt::FullBox(t.shape)});
      } else {
        const int dim = layout == BenchLayout::kTpOtherDim ? 1 - t.split : t.split;
        regions.push_back({i, SplitBox(t.shape, dim, rank, world)});
      }
    }
  }
  for (auto& [i, region] : regions) {
    const BenchTensor& t = tensors[i];
    ckpt::TensorEntry e{t.name, DType::kF32, t.shape, region, nullptr,
                        world > 1 && t.split < 0 && layout != BenchLayout::kFlat};
    buffers_.push_back(fill ? Expected(i, e) : std::vector<float>(ckpt::RegionElements(e), 0.f));
    e.data = buffers_.back().data();  // moving the outer vector keeps inner buffers in place
    bytes_ += ckpt::RegionElements(e) * 4;
    index_.push_back(i);
    dict_.AddTensor(std::move(e));
  }
}

std::vector<float> BenchState::Expected(size_t tensor, const ckpt::TensorEntry& e) {
  std::vector<float> out(static_cast<size_t>(ckpt::RegionElements(e)));
  for (const ckpt::Piece& p : ckpt::RegionPieces(e)) {
    ckpt::ForEachRun(ckpt::FullBox(e.shape), p.box, p.box, [&](const ckpt::Run& r) {
      for (int64_t j = 0; j < r.elems; ++j) out[p.data_elem + r.dst + j] = Pattern(tensor, r.src + j);
    });
  }
  return out;
}

void BenchState::Clear() {
  for (auto& b : buffers_) std::fill(b.begin(), b.end(), 0.f);
}

bool BenchState::MatchesPattern() const {
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (buffers_[i] != Expected(index_[i], dict_.tensors()[i])) return false;
  }
  return true;
}

}  // namespace loom::cli
