#include "loom/nn/safetensors_io.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "loom/base/file_util.h"

namespace loom::nn {

Status WriteSafetensors(const std::string& path, const FlatLayout& layout, const float* flat,
                        const std::map<std::string, std::string>& metadata) {
  nlohmann::json header;
  header["__metadata__"] = metadata;
  int64_t pos = 0;
  for (const ParamSlot& s : layout.slots()) {
    int64_t bytes = s.spec.numel() * 4;
    header[s.spec.name] = {{"dtype", "F32"}, {"shape", s.spec.shape}, {"data_offsets", {pos, pos + bytes}}};
    pos += bytes;
  }
  std::string h = header.dump();
  while ((h.size() + 8) % 8 != 0) h.push_back(' ');
  std::string out(8, '\0');
  uint64_t n = h.size();
  std::memcpy(out.data(), &n, 8);  // little-endian on every platform loom runs on
  out += h;
  for (const ParamSlot& s : layout.slots()) {
    out.append(reinterpret_cast<const char*>(flat + s.offset), s.spec.numel() * 4);
  }
  return WriteFileAtomic(path, out);
}

Result<std::map<std::string, SafetensorsEntry>> ReadSafetensors(const std::string& path) {
  LOOM_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  auto bad = [&](const std::string& why) { return DataLossError(path + ": " + why); };
  if (bytes.size() < 8) return bad("shorter than the 8-byte header length");
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8) return bad("header length " + std::to_string(n) + " exceeds the file");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n));
  } catch (const std::exception& e) {
    return bad(std::string("header is not JSON: ") + e.what());
  }
  const size_t data_start = 8 + n;
  std::map<std::string, SafetensorsEntry> out;
  try {
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") continue;
      SafetensorsEntry e;
      e.dtype = it.value().at("dtype");
      e.shape = it.value().at("shape").get<std::vector<int64_t>>();
      auto off = it.value().at("data_offsets").get<std::vector<uint64_t>>();
      if (off.size() != 2 || off[0] > off[1] || data_start + off[1] > bytes.size()) {
        return bad("tensor '" + it.key() + "' has data_offsets outside the file");
      }
      e.data.assign(bytes.begin() + data_start + off[0], bytes.begin() + data_start + off[1]);
      out[it.key()] = std::move(e);
    }
  } catch (const std::exception& e) {
    return bad(std::string("malformed tensor entry: ") + e.what());
  }
  return out;
}

}  // namespace loom::nn
