#include "loom/ckpt/save_plan.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace loom::ckpt {

using nlohmann::json;

Result<LocalPlan> MakeLocalPlan(const StateDict& state) {
  LocalPlan plan;
  for (int i = 0; i < static_cast<int>(state.tensors().size()); ++i) {
    const TensorEntry& e = state.tensors()[i];
    LOOM_RETURN_IF_ERROR(ElementBytes(e.dtype).status().WithContext("tensor '" + e.name + "'"));
    if (const Box* b = std::get_if<Box>(&e.region); b && !BoxInBounds(*b, e.shape)) {
      return InvalidArgumentError("tensor '" + e.name + "': box " + b->DebugString() +
                                  " is outside its global shape");
    }
    if (const FlatRange* r = std::get_if<FlatRange>(&e.region);
        r && (r->begin < 0 || r->end < r->begin || r->end > NumElements(e.shape))) {
      return InvalidArgumentError("tensor '" + e.name + "': flat range [" +
                                  std::to_string(r->begin) + ", " + std::to_string(r->end) +
                                  ") is outside its " + std::to_string(NumElements(e.shape)) +
                                  " elements");
    }
    if (e.data == nullptr && RegionElements(e) > 0) {
      return InvalidArgumentError("tensor '" + e.name + "' has no data");
    }
    for (Piece& p : RegionPieces(e)) {
      plan.items.push_back({e.name, e.dtype, e.shape, std::move(p.box), e.replicated, i,
                            p.data_elem});
    }
  }
  for (int i = 0; i < static_cast<int>(state.objects().size()); ++i) {
    const ObjectEntry& o = state.objects()[i];
    plan.objects.push_back({o.key, static_cast<int64_t>(o.bytes.size()), o.replicated, i});
  }
  return plan;
}

std::string SerializeLocalPlan(const LocalPlan& plan) {
  json items = json::array();
  for (const LocalItem& it : plan.items) {
    items.push_back({it.name, DTypeName(it.dtype), it.shape, it.box.off, it.box.len,
                     it.replicated});
  }
  json objects = json::array();
  for (const LocalObject& o : plan.objects) objects.push_back({o.key, o.bytes, o.replicated});
  return json{{"items", items}, {"objects", objects}}.dump();
}

Result<LocalPlan> ParseLocalPlan(std::string_view text, int rank) {
  const std::string where = "local save plan of rank " + std::to_string(rank);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InternalError(where + " is not JSON");
  LocalPlan plan;
  try {
    for (const json& it : j.at("items")) {
      LocalItem item;
      item.name = it.at(0).get<std::string>();
      LOOM_ASSIGN_OR_RETURN(item.dtype, ParseDType(it.at(1).get<std::string>()));
      item.shape = it.at(2).get<Shape>();
      item.box = {it.at(3).get<Shape>(), it.at(4).get<Shape>()};
      item.replicated = it.at(5).get<bool>();
      plan.items.push_back(std::move(item));
    }
    for (const json& o : j.at("objects")) {
      plan.objects.push_back({o.at(0).get<std::string>(), o.at(1).get<int64_t>(),
                              o.at(2).get<bool>(), -1});
    }
  } catch (const json::exception& e) {
    return InternalError(where + " is malformed: " + e.what());
  }
  for (int i = 0; i < static_cast<int>(plan.items.size()); ++i) plan.items[i].entry = i;
  for (int i = 0; i < static_cast<int>(plan.objects.size()); ++i) plan.objects[i].entry = i;
  return plan;
}

namespace {

// One thing to write once: a (tensor, box) or an object, and the ranks holding it.
struct Unique {
  bool object = false;
  std::string name;
  Box box;
  int64_t bytes = 0;
  bool replicated = false;
  std::vector<std::pair<int, int>> holders;  // (rank, local index)
  int writer = -1;
};

std::string BoxKey(const std::string& name, const Box& b) {
  std::string k = name + "|";
  for (size_t i = 0; i < b.off.size(); ++i) {
    k += std::to_string(b.off[i]) + ":" + std::to_string(b.len[i]) + ",";
  }
  return k;
}

}  // namespace

Result<GlobalPlan> MakeGlobalPlan(const std::vector<LocalPlan>& plans) {
  const int world = static_cast<int>(plans.size());
  GlobalPlan g;
  g.meta.world_size = world;
  std::map<std::string, Unique> uniques;  // ordered: deterministic on every rank
  for (int r = 0; r < world; ++r) {
    for (int i = 0; i < static_cast<int>(plans[r].items.size()); ++i) {
      const LocalItem& it = plans[r].items[i];
      auto [tit, fresh] = g.meta.tensors.try_emplace(it.name);
      TensorMeta& t = tit->second;
      if (fresh) {
        t.dtype = it.dtype;
        t.shape = it.shape;
      } else if (t.dtype != it.dtype || t.shape != it.shape) {
        return InvalidArgumentError("tensor '" + it.name + "' is " +
                                    std::string(DTypeName(it.dtype)) + " on rank " +
                                    std::to_string(r) + " but " +
                                    std::string(DTypeName(t.dtype)) +
                                    " (or another global shape) on an earlier rank");
      }
      Unique& u = uniques[BoxKey(it.name, it.box)];
      if (u.holders.empty()) {
        u.name = it.name;
        u.box = it.box;
        u.bytes = it.box.Volume() * DTypeBits(it.dtype) / 8;
        u.replicated = it.replicated;
      } else if (!it.replicated || !u.replicated) {
        return InvalidArgumentError(
            "tensor '" + it.name + "' box " + it.box.DebugString() + " is held by ranks " +
            std::to_string(u.holders.front().first) + " and " + std::to_string(r) +
            " but not marked replicated on both");
      }
      u.holders.push_back({r, i});
    }
    for (int i = 0; i < static_cast<int>(plans[r].objects.size()); ++i) {
      const LocalObject& o = plans[r].objects[i];
      // Per-rank objects are keyed by rank; replicated ones share one key.
      Unique& u = uniques["\x01" + o.key + (o.replicated ? "" : "@" + std::to_string(r))];
      if (!u.holders.empty() && u.bytes != o.bytes) {
        return InvalidArgumentError("replicated object '" + o.key + "' has " +
                                    std::to_string(o.bytes) + " bytes on rank " +
                                    std::to_string(r) + " but " + std::to_string(u.bytes) +
                                    " on rank " + std::to_string(u.holders.front().first));
      }
      u.object = true;
      u.name = o.key;
      u.bytes = o.bytes;
      u.replicated = o.replicated;
      u.holders.push_back({r, i});
    }
  }
  // Single holders first (no choice), then replicated ones: fewest holders, largest first.
  std::vector<Unique*> order;
  for (auto& [k, u] : uniques) order.push_back(&u);
  std::stable_sort(order.begin(), order.end(), [](const Unique* a, const Unique* b) {
    if (a->holders.size() != b->holders.size()) return a->holders.size() < b->holders.size();
    return a->bytes > b->bytes;
  });
  std::vector<int64_t> load(world, 0);
  for (Unique* u : order) {
    int best = u->holders.front().first;
    for (const auto& [r, i] : u->holders) {
      if (load[r] < load[best]) best = r;
    }
    u->writer = best;
    load[best] += u->bytes;
  }
  // Lay out each rank's file in its local order.
  std::vector<std::vector<Unique*>> by_rank(world);
  for (auto& [k, u] : uniques) by_rank[u.writer].push_back(&u);
  g.writes.resize(world);
  g.file_bytes.assign(world, 0);
  for (int r = 0; r < world; ++r) {
    auto local_index = [r](const Unique* u) {
      for (const auto& [hr, i] : u->holders) {
        if (hr == r) return i;
      }
      return -1;
    };
    std::sort(by_rank[r].begin(), by_rank[r].end(), [&](const Unique* a, const Unique* b) {
      if (a->object != b->object) return !a->object;
      return local_index(a) < local_index(b);
    });
    g.meta.files.push_back({"data/r" + std::to_string(r) + ".bin", 0});
    int64_t off = 0;
    for (const Unique* u : by_rank[r]) {
      PlannedWrite w{u->object, local_index(u), u->name, 0, off, u->bytes};
      if (u->object) {
        auto& list = g.meta.objects[u->name];
        w.chunk = static_cast<int>(list.size());
        list.push_back({u->replicated ? -1 : r, r, off, u->bytes, std::nullopt});
      } else {
        auto& chunks = g.meta.tensors[u->name].chunks;
        w.chunk = static_cast<int>(chunks.size());
        chunks.push_back({u->box, r, off, u->bytes, std::nullopt});
      }
      g.writes[r].push_back(std::move(w));
      off = AlignUp(off + u->bytes);
    }
    g.file_bytes[r] = off;
    g.meta.files.back().bytes = off;
  }
  LOOM_RETURN_IF_ERROR(ValidateMetadata(g.meta, "save plan"));
  return g;
}

}  // namespace loom::ckpt
