#include "loom/ckpt/safetensors.h"

#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

namespace loom::ckpt {

using nlohmann::json;

namespace {

std::string BaseName(const std::string& p) {
  size_t k = p.rfind('/');
  return k == std::string::npos ? p : p.substr(k + 1);
}

// Adds the tensors of one safetensors file (file index `fi` of meta.files) to `meta`.
Status ReadHeader(Storage& storage, const std::string& dir, int fi, CheckpointMeta* meta) {
  const std::string path = JoinPath(dir, meta->files[fi].path);
  LOOM_ASSIGN_OR_RETURN(auto f, storage.Open(path, {.direct = false}));
  const int64_t size = f->size();
  meta->files[fi].bytes = size;
  uint64_t n = 0;
  if (size < 8) return DataLossError(path + ": too short for a safetensors file");
  LOOM_RETURN_IF_ERROR(f->ReadAt(0, 8, &n));
  if (n > static_cast<uint64_t>(size - 8) || n > (100u << 20)) {
    return DataLossError(path + ": header length " + std::to_string(n) +
                         " does not fit the file (" + std::to_string(size) + " bytes)");
  }
  std::string text(n, '\0');
  LOOM_RETURN_IF_ERROR(f->ReadAt(8, static_cast<int64_t>(n), text.data()));
  json h = json::parse(text, nullptr, false);
  if (h.is_discarded() || !h.is_object()) return DataLossError(path + ": header is not JSON");
  const int64_t data_start = 8 + static_cast<int64_t>(n);
  for (const auto& [name, tj] : h.items()) {
    if (name == "__metadata__") {
      meta->user["safetensors_metadata"] = tj;
      continue;
    }
    const std::string w = path + ": tensor '" + name + "'";
    try {
      auto dt = ParseDType(tj.at("dtype").get<std::string>());
      if (!dt.ok()) return InvalidArgumentError(w + ": " + dt.status().message());
      Shape shape = tj.at("shape").get<Shape>();
      auto offs = tj.at("data_offsets").get<std::vector<int64_t>>();
      if (offs.size() != 2) return DataLossError(w + ": data_offsets must have two entries");
      if (meta->tensors.count(name)) {
        return InvalidArgumentError(w + " appears in more than one file of the set");
      }
      TensorMeta t{*dt, shape, {}};
      t.chunks.push_back({FullBox(shape), fi, data_start + offs[0], offs[1] - offs[0],
                          std::nullopt});
      meta->tensors[name] = std::move(t);
    } catch (const json::exception& e) {
      return DataLossError(w + " is malformed: " + e.what());
    }
  }
  return OkStatus();
}

}  // namespace

Result<CheckpointSource> OpenSafetensors(Storage& storage, const std::string& path) {
  CheckpointSource src;
  src.kind = "safetensors";
  src.meta.producer = "safetensors";
  if (path.ends_with(".safetensors")) {
    if (!storage.Exists(path)) return NotFoundError(path + " does not exist");
    src.dir = ParentPath(path);
    src.meta.files.push_back({BaseName(path), 0});
  } else {
    src.dir = path;
    const std::string index_path = JoinPath(path, kHfIndexFile);
    LOOM_ASSIGN_OR_RETURN(std::string text, storage.ReadSmallFile(index_path));
    json idx = json::parse(text, nullptr, false);
    if (idx.is_discarded() || !idx.contains("weight_map") || !idx["weight_map"].is_object()) {
      return DataLossError(index_path + ": no weight_map object");
    }
    std::set<std::string> files;
    for (const auto& [name, file] : idx["weight_map"].items()) {
      if (!file.is_string()) return DataLossError(index_path + ": weight_map values are files");
      files.insert(file.get<std::string>());
    }
    for (const std::string& f : files) src.meta.files.push_back({f, 0});
  }
  for (int i = 0; i < static_cast<int>(src.meta.files.size()); ++i) {
    LOOM_RETURN_IF_ERROR(ReadHeader(storage, src.dir, i, &src.meta));
  }
  LOOM_RETURN_IF_ERROR(ValidateMetadata(src.meta, path));
  return src;
}

namespace {

struct Shard {
  std::vector<std::string> names;
  int64_t bytes = 0;
};

std::string ShardName(int i, int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i + 1, n);
  return buf;
}

Status WriteShard(Storage& storage, const CheckpointSource& src, const Shard& shard,
                  const std::string& path, const ExportOptions& opts, ExportReport* report,
                  int64_t* done, int64_t total) {
  json header = json::object();
  int64_t at = 0;
  for (const std::string& name : shard.names) {
    const TensorMeta& t = src.meta.tensors.at(name);
    const int64_t bytes = NumElements(t.shape) * DTypeBits(t.dtype) / 8;
    header[name] = {{"dtype", DTypeName(t.dtype)}, {"shape", t.shape},
                    {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  header["__metadata__"] = opts.metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  const uint64_t n = text.size();
  const std::string tmp = path + ".tmp";
  LOOM_ASSIGN_OR_RETURN(auto f, storage.Create(tmp, {.direct = false}));
  LOOM_RETURN_IF_ERROR(f->WriteAt(0, &n, 8));
  LOOM_RETURN_IF_ERROR(f->WriteAt(8, text.data(), static_cast<int64_t>(n)));
  int64_t off = 8 + static_cast<int64_t>(n);
  std::vector<char> buf;
  for (const std::string& name : shard.names) {
    const TensorMeta& t = src.meta.tensors.at(name);
    const int64_t bytes = NumElements(t.shape) * DTypeBits(t.dtype) / 8;
    LOOM_RETURN_IF_ERROR(ReadFullTensor(storage, src, name, &buf));
    LOOM_RETURN_IF_ERROR(f->WriteAt(off, buf.data(), bytes));
    off += bytes;
    report->peak_tensor_bytes = std::max(report->peak_tensor_bytes, bytes);
    ++report->tensors;
    *done += bytes;
    if (opts.progress) opts.progress(*done, total);
  }
  LOOM_RETURN_IF_ERROR(f->Sync());
  LOOM_RETURN_IF_ERROR(f->Close());
  LOOM_RETURN_IF_ERROR(storage.Rename(tmp, path));
  report->bytes += off;
  ++report->files;
  return OkStatus();
}

}  // namespace

Result<ExportReport> ExportSafetensors(Storage& storage, const CheckpointSource& src,
                                       const std::string& out, const ExportOptions& opts) {
  std::vector<Shard> shards(1);
  int64_t total = 0;
  for (const auto& [name, t] : src.meta.tensors) {
    LOOM_RETURN_IF_ERROR(ElementBytes(t.dtype).status());
    const int64_t bytes = NumElements(t.shape) * DTypeBits(t.dtype) / 8;
    if (opts.max_shard_bytes > 0 && !shards.back().names.empty() &&
        shards.back().bytes + bytes > opts.max_shard_bytes) {
      shards.emplace_back();
    }
    shards.back().names.push_back(name);
    shards.back().bytes += bytes;
    total += bytes;
  }
  ExportReport report;
  int64_t done = 0;
  if (opts.max_shard_bytes <= 0) {
    LOOM_RETURN_IF_ERROR(WriteShard(storage, src, shards[0], out, opts, &report, &done, total));
    return report;
  }
  LOOM_RETURN_IF_ERROR(storage.MakeDirs(out));
  json weight_map = json::object();
  const int n = static_cast<int>(shards.size());
  for (int i = 0; i < n; ++i) {
    const std::string name = ShardName(i, n);
    LOOM_RETURN_IF_ERROR(
        WriteShard(storage, src, shards[i], JoinPath(out, name), opts, &report, &done, total));
    for (const std::string& t : shards[i].names) weight_map[t] = name;
  }
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  LOOM_RETURN_IF_ERROR(storage.WriteSmallFile(JoinPath(out, kHfIndexFile), index.dump(2)));
  return report;
}

}  // namespace loom::ckpt
