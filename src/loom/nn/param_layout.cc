#include "loom/nn/param_layout.h"

#include <algorithm>

namespace loom::nn {

int64_t ParamSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {
int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
}  // namespace

FlatLayout::FlatLayout(std::vector<ParamSpec> specs, LayoutOptions options) {
  const int64_t pad = std::max<int64_t>(1, options.pad);
  slots_.resize(specs.size());
  int64_t pos = 0;
  Bucket current;
  auto close_bucket = [&] {
    if (current.params.empty()) return;
    pos = RoundUp(pos, pad);
    current.end = pos;
    buckets_.push_back(current);
    current = Bucket{pos, pos, {}};
  };
  for (size_t k = specs.size(); k-- > 0;) {
    const int64_t n = specs[k].numel();
    if (options.bucket_elems > 0 && !current.params.empty() &&
        pos + n - current.begin > options.bucket_elems) {
      close_bucket();
    }
    slots_[k].offset = pos;
    slots_[k].bucket = static_cast<int>(buckets_.size());
    current.params.push_back(static_cast<int>(k));
    pos = RoundUp(pos + n, kAlignElems);
    slots_[k].spec = std::move(specs[k]);
  }
  close_bucket();
  total_ = pos;
}

int FlatLayout::SlotAt(int64_t e) const {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (e >= slots_[i].offset && e < slots_[i].offset + slots_[i].spec.numel()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

std::vector<ParamSpec> GptParamSpecs(const GptConfig& c) {
  const int64_t d = c.d_model, f = c.d_ff();
  std::vector<ParamSpec> p;
  auto add = [&](std::string name, std::vector<int64_t> shape, InitKind init, bool emb,
                 bool decay) { p.push_back({std::move(name), std::move(shape), init, emb, decay}); };
  add("wte", {c.vocab_size, d}, InitKind::kNormal, true, true);
  add("wpe", {c.context_length, d}, InitKind::kNormal, true, true);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    std::string b = "blocks." + std::to_string(l) + ".";
    add(b + "ln1.weight", {d}, InitKind::kOnes, false, false);
    add(b + "ln1.bias", {d}, InitKind::kZeros, false, false);
    add(b + "attn.qkv.weight", {3 * d, d}, InitKind::kNormal, false, true);
    add(b + "attn.qkv.bias", {3 * d}, InitKind::kZeros, false, false);
    add(b + "attn.proj.weight", {d, d}, InitKind::kNormalResidual, false, true);
    add(b + "attn.proj.bias", {d}, InitKind::kZeros, false, false);
    if (!c.parallel_block) {
      add(b + "ln2.weight", {d}, InitKind::kOnes, false, false);
      add(b + "ln2.bias", {d}, InitKind::kZeros, false, false);
    }
    add(b + "mlp.fc.weight", {f, d}, InitKind::kNormal, false, true);
    add(b + "mlp.fc.bias", {f}, InitKind::kZeros, false, false);
    add(b + "mlp.proj.weight", {d, f}, InitKind::kNormalResidual, false, true);
    add(b + "mlp.proj.bias", {d}, InitKind::kZeros, false, false);
  }
  add("ln_f.weight", {d}, InitKind::kOnes, false, false);
  add("ln_f.bias", {d}, InitKind::kZeros, false, false);
  return p;
}

}  // namespace loom::nn
