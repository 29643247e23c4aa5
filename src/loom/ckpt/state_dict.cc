#include "loom/ckpt/state_dict.h"

namespace loom::ckpt {

std::vector<Piece> RegionPieces(const TensorEntry& e) {
  std::vector<Piece> out;
  if (const Box* b = std::get_if<Box>(&e.region)) {
    if (b->Volume() > 0) out.push_back({*b, 0});
    return out;
  }
  const FlatRange& r = std::get<FlatRange>(e.region);
  int64_t at = 0;
  for (Box& b : DecomposeFlatRange(e.shape, r.begin, r.end)) {
    const int64_t v = b.Volume();
    out.push_back({std::move(b), at});
    at += v;
  }
  return out;
}

int64_t RegionElements(const TensorEntry& e) {
  if (const Box* b = std::get_if<Box>(&e.region)) return b->Volume();
  const FlatRange& r = std::get<FlatRange>(e.region);
  return r.end - r.begin;
}

}  // namespace loom::ckpt
