#include "loom/ckpt/metadata.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace loom::ckpt {

using nlohmann::json;

int64_t CheckpointMeta::TensorBytes() const {
  int64_t n = 0;
  for (const auto& [name, t] : tensors) {
    for (const ChunkMeta& c : t.chunks) n += c.byte_len;
  }
  return n;
}

Result<int64_t> ElementBytes(DType t) {
  if (DTypeBits(t) % 8 != 0) {
    return InvalidArgumentError("dtype " + std::string(DTypeName(t)) +
                                " is packed; checkpoints need byte-sized elements");
  }
  return DTypeBits(t) / 8;
}

std::string HexU64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Result<uint64_t> ParseHexU64(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
    return InvalidArgumentError("not a hex u64: '" + std::string(s) + "'");
  }
  return v;
}

std::string MetadataToJson(const CheckpointMeta& m) {
  json j;
  j["format"] = kFormatName;
  j["version"] = m.version;
  j["world_size"] = m.world_size;
  j["step"] = m.step;
  j["producer"] = m.producer;
  j["files"] = json::array();
  for (const FileMeta& f : m.files) j["files"].push_back({{"path", f.path}, {"bytes", f.bytes}});
  json tensors = json::object();
  for (const auto& [name, t] : m.tensors) {
    json chunks = json::array();
    for (const ChunkMeta& c : t.chunks) {
      json cj = {{"off", c.box.off}, {"len", c.box.len}, {"file", c.file},
                 {"byte_off", c.byte_off}, {"byte_len", c.byte_len}};
      if (c.xxh64) cj["xxh64"] = HexU64(*c.xxh64);
      chunks.push_back(std::move(cj));
    }
    tensors[name] = {{"dtype", DTypeName(t.dtype)}, {"shape", t.shape}, {"chunks", chunks}};
  }
  j["tensors"] = std::move(tensors);
  json objects = json::object();
  for (const auto& [key, list] : m.objects) {
    json arr = json::array();
    for (const ObjectMeta& o : list) {
      json oj = {{"rank", o.rank}, {"file", o.file}, {"byte_off", o.byte_off},
                 {"byte_len", o.byte_len}};
      if (o.xxh64) oj["xxh64"] = HexU64(*o.xxh64);
      arr.push_back(std::move(oj));
    }
    objects[key] = std::move(arr);
  }
  j["objects"] = std::move(objects);
  j["user"] = m.user;
  return j.dump(1);
}

namespace {

// Field access that turns nlohmann's type errors into messages naming the field.
template <typename T>
Result<T> Get(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgumentError(where + ": missing field '" + key + "'");
  try {
    return it->template get<T>();
  } catch (const json::exception& e) {
    return InvalidArgumentError(where + ": field '" + key + "' has the wrong type (" +
                                it->type_name() + ")");
  }
}

Result<std::optional<uint64_t>> GetHash(const json& j, const std::string& where) {
  auto it = j.find("xxh64");
  if (it == j.end()) return std::optional<uint64_t>();
  if (!it->is_string()) return InvalidArgumentError(where + ": xxh64 must be a hex string");
  auto v = ParseHexU64(it->get<std::string>());
  if (!v.ok()) return InvalidArgumentError(where + ": " + v.status().message());
  return std::optional<uint64_t>(*v);
}

Status ParseTensor(const std::string& name, const json& tj, TensorMeta* t,
                   const std::string& where) {
  const std::string w = where + ": tensor '" + name + "'";
  if (!tj.is_object()) return InvalidArgumentError(w + " is not an object");
  LOOM_ASSIGN_OR_RETURN(std::string dtype, Get<std::string>(tj, "dtype", w));
  auto dt = ParseDType(dtype);
  if (!dt.ok()) return InvalidArgumentError(w + ": unknown dtype '" + dtype + "'");
  t->dtype = *dt;
  LOOM_ASSIGN_OR_RETURN(t->shape, Get<Shape>(tj, "shape", w));
  LOOM_ASSIGN_OR_RETURN(json chunks, Get<json>(tj, "chunks", w));
  if (!chunks.is_array()) return InvalidArgumentError(w + ": chunks must be an array");
  for (size_t i = 0; i < chunks.size(); ++i) {
    const std::string cw = w + " chunk " + std::to_string(i);
    const json& cj = chunks[i];
    if (!cj.is_object()) return InvalidArgumentError(cw + " is not an object");
    ChunkMeta c;
    LOOM_ASSIGN_OR_RETURN(c.box.off, Get<Shape>(cj, "off", cw));
    LOOM_ASSIGN_OR_RETURN(c.box.len, Get<Shape>(cj, "len", cw));
    LOOM_ASSIGN_OR_RETURN(c.file, Get<int>(cj, "file", cw));
    LOOM_ASSIGN_OR_RETURN(c.byte_off, Get<int64_t>(cj, "byte_off", cw));
    LOOM_ASSIGN_OR_RETURN(c.byte_len, Get<int64_t>(cj, "byte_len", cw));
    LOOM_ASSIGN_OR_RETURN(c.xxh64, GetHash(cj, cw));
    t->chunks.push_back(std::move(c));
  }
  return OkStatus();
}

}  // namespace

Result<CheckpointMeta> MetadataFromJson(std::string_view text, const std::string& where) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError(where + ": metadata is not valid JSON");
  if (!j.is_object()) return InvalidArgumentError(where + ": metadata is not a JSON object");
  CheckpointMeta m;
  LOOM_ASSIGN_OR_RETURN(std::string format, Get<std::string>(j, "format", where));
  if (format != kFormatName) {
    return InvalidArgumentError(where + ": format is '" + format + "', expected '" +
                                kFormatName + "'");
  }
  LOOM_ASSIGN_OR_RETURN(m.version, Get<int>(j, "version", where));
  if (m.version > kFormatVersion || m.version < 1) {
    return InvalidArgumentError(where + ": format version " + std::to_string(m.version) +
                                " is not supported (this loom reads up to version " +
                                std::to_string(kFormatVersion) + "; upgrade loom)");
  }
  LOOM_ASSIGN_OR_RETURN(m.world_size, Get<int>(j, "world_size", where));
  LOOM_ASSIGN_OR_RETURN(m.step, Get<int64_t>(j, "step", where));
  if (j.contains("producer")) {
    LOOM_ASSIGN_OR_RETURN(m.producer, Get<std::string>(j, "producer", where));
  }
  LOOM_ASSIGN_OR_RETURN(json files, Get<json>(j, "files", where));
  if (!files.is_array()) return InvalidArgumentError(where + ": files must be an array");
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string fw = where + ": file " + std::to_string(i);
    if (!files[i].is_object()) return InvalidArgumentError(fw + " is not an object");
    FileMeta f;
    LOOM_ASSIGN_OR_RETURN(f.path, Get<std::string>(files[i], "path", fw));
    LOOM_ASSIGN_OR_RETURN(f.bytes, Get<int64_t>(files[i], "bytes", fw));
    m.files.push_back(std::move(f));
  }
  LOOM_ASSIGN_OR_RETURN(json tensors, Get<json>(j, "tensors", where));
  if (!tensors.is_object()) return InvalidArgumentError(where + ": tensors must be an object");
  for (const auto& [name, tj] : tensors.items()) {
    LOOM_RETURN_IF_ERROR(ParseTensor(name, tj, &m.tensors[name], where));
  }
  if (j.contains("objects")) {
    LOOM_ASSIGN_OR_RETURN(json objects, Get<json>(j, "objects", where));
    if (!objects.is_object()) return InvalidArgumentError(where + ": objects must be an object");
    for (const auto& [key, arr] : objects.items()) {
      const std::string ow = where + ": object '" + key + "'";
      if (!arr.is_array()) return InvalidArgumentError(ow + " must be an array");
      for (const json& oj : arr) {
        if (!oj.is_object()) return InvalidArgumentError(ow + ": entry is not an object");
        ObjectMeta o;
        LOOM_ASSIGN_OR_RETURN(o.rank, Get<int>(oj, "rank", ow));
        LOOM_ASSIGN_OR_RETURN(o.file, Get<int>(oj, "file", ow));
        LOOM_ASSIGN_OR_RETURN(o.byte_off, Get<int64_t>(oj, "byte_off", ow));
        LOOM_ASSIGN_OR_RETURN(o.byte_len, Get<int64_t>(oj, "byte_len", ow));
        LOOM_ASSIGN_OR_RETURN(o.xxh64, GetHash(oj, ow));
        m.objects[key].push_back(o);
      }
    }
  }
  if (j.contains("user")) m.user = j["user"];
  LOOM_RETURN_IF_ERROR(ValidateMetadata(m, where));
  return m;
}

namespace {

Status CheckByteRange(int file, int64_t off, int64_t len, const CheckpointMeta& m,
                      const std::string& w) {
  if (file < 0 || file >= static_cast<int>(m.files.size())) {
    return InvalidArgumentError(w + " refers to file " + std::to_string(file) + " of " +
                                std::to_string(m.files.size()));
  }
  const FileMeta& f = m.files[file];
  if (off < 0 || len < 0 || off + len > f.bytes) {
    return InvalidArgumentError(w + ": bytes [" + std::to_string(off) + ", " +
                                std::to_string(off + len) + ") lie outside " + f.path + " (" +
                                std::to_string(f.bytes) + " bytes)");
  }
  return OkStatus();
}

}  // namespace

Status ValidateMetadata(const CheckpointMeta& m, const std::string& where) {
  for (const FileMeta& f : m.files) {
    if (f.path.empty() || f.path[0] == '/' || f.path.find("..") != std::string::npos) {
      return InvalidArgumentError(where + ": file path '" + f.path +
                                  "' must be relative and stay inside the checkpoint");
    }
    if (f.bytes < 0) return InvalidArgumentError(where + ": file " + f.path + " has bytes < 0");
  }
  for (const auto& [name, t] : m.tensors) {
    const std::string w = where + ": tensor '" + name + "'";
    LOOM_ASSIGN_OR_RETURN(int64_t esize, ElementBytes(t.dtype));
    for (int64_t d : t.shape) {
      if (d < 0) return InvalidArgumentError(w + " has a negative dimension");
    }
    int64_t covered = 0;
    for (size_t i = 0; i < t.chunks.size(); ++i) {
      const ChunkMeta& c = t.chunks[i];
      const std::string cw = w + " chunk " + std::to_string(i) + " " + c.box.DebugString();
      if (!BoxInBounds(c.box, t.shape)) {
        return InvalidArgumentError(cw + " is outside the global shape");
      }
      if (c.byte_len != c.box.Volume() * esize) {
        return InvalidArgumentError(cw + ": byte_len " + std::to_string(c.byte_len) +
                                    " does not match the box (" +
                                    std::to_string(c.box.Volume() * esize) + " bytes)");
      }
      LOOM_RETURN_IF_ERROR(CheckByteRange(c.file, c.byte_off, c.byte_len, m, cw));
      covered += c.box.Volume();
    }
    // Disjointness: sort by the first dim's offset and compare only chunks that can overlap.
    if (!t.shape.empty() && t.chunks.size() > 1) {
      std::vector<const ChunkMeta*> order;
      for (const ChunkMeta& c : t.chunks) order.push_back(&c);
      std::sort(order.begin(), order.end(), [](const ChunkMeta* a, const ChunkMeta* b) {
        return a->box.off[0] < b->box.off[0];
      });
      for (size_t i = 0; i < order.size(); ++i) {
        const int64_t end0 = order[i]->box.off[0] + order[i]->box.len[0];
        for (size_t k = i + 1; k < order.size() && order[k]->box.off[0] < end0; ++k) {
          if (order[k]->box.Volume() > 0 && order[i]->box.Volume() > 0 &&
              Intersect(order[i]->box, order[k]->box)) {
            return InvalidArgumentError(w + ": chunks " + order[i]->box.DebugString() + " and " +
                                        order[k]->box.DebugString() + " overlap");
          }
        }
      }
    }
    if (t.shape.empty() && t.chunks.size() > 1) {
      return InvalidArgumentError(w + ": a 0-d tensor has more than one chunk");
    }
    if (covered != NumElements(t.shape)) {
      return InvalidArgumentError(w + ": chunks cover " + std::to_string(covered) + " of " +
                                  std::to_string(NumElements(t.shape)) + " elements");
    }
  }
  for (const auto& [key, list] : m.objects) {
    for (const ObjectMeta& o : list) {
      LOOM_RETURN_IF_ERROR(CheckByteRange(o.file, o.byte_off, o.byte_len, m,
                                          where + ": object '" + key + "'"));
    }
  }
  return OkStatus();
}

}  // namespace loom::ckpt
