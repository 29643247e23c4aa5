// Save planning: each rank lists what it holds (LocalPlan); the planner, run identically on every
// rank from all ranks' local plans, decides who writes which box where (GlobalPlan).
//
//   - Replicated boxes (same tensor, same box, on several ranks) are written once. They are
//     assigned in Megatron's order (fewest holders first, then largest first) to the holder with
//     the fewest bytes assigned so far, so replicated state spreads evenly over the ranks.
//   - A flat range was already cut into boxes by RegionPieces (no communication needed).
//   - Each rank writes one file, data/r<rank>.bin; every item starts on a 4 KiB boundary, so the
//     rank's file image is laid out at plan time and the snapshot copies straight into it.
//   - Inconsistent plans (one name with two dtypes or shapes, overlapping boxes, boxes not
//     covering the tensor, a box on two ranks not marked replicated) fail on every rank with a
//     message naming the tensor.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/status.h"
#include "loom/ckpt/metadata.h"
#include "loom/ckpt/state_dict.h"

namespace loom::ckpt {

struct LocalItem {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  Box box;
  bool replicated = false;
  // Where the bytes are on this rank (not exchanged).
  int entry = -1;
  int64_t data_elem = 0;
};

struct LocalObject {
  std::string key;
  int64_t bytes = 0;
  bool replicated = false;
  int entry = -1;
};

struct LocalPlan {
  std::vector<LocalItem> items;
  std::vector<LocalObject> objects;
};

Result<LocalPlan> MakeLocalPlan(const StateDict& state);
// Compact JSON without the local-only fields; the plan cache hashes this text.
std::string SerializeLocalPlan(const LocalPlan& plan);
Result<LocalPlan> ParseLocalPlan(std::string_view text, int rank);

// One write a rank performs: a local item or object, copied to `file_off` of its file.
struct PlannedWrite {
  bool object = false;
  int local_index = 0;   // into LocalPlan::items or ::objects of that rank
  std::string name;      // tensor name or object key
  int chunk = 0;         // index into meta.tensors[name].chunks or meta.objects[name]
  int64_t file_off = 0;
  int64_t bytes = 0;
};

struct GlobalPlan {
  CheckpointMeta meta;                            // no checksums yet
  std::vector<std::vector<PlannedWrite>> writes;  // [rank], in file order
  std::vector<int64_t> file_bytes;                // [rank], a multiple of kAlignment
};

Result<GlobalPlan> MakeGlobalPlan(const std::vector<LocalPlan>& plans);

inline int64_t AlignUp(int64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace loom::ckpt
