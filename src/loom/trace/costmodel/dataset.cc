#include "loom/trace/costmodel/dataset.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace loom::trace::costmodel {
namespace {

constexpr const char* kFormat = "loom.costmodel.dataset";

nlohmann::json DeviceToJson(const DeviceInfo& d) {
  return {{"name", d.device.Name()},       {"isa", IsaName(d.device.isa)},
          {"threads", d.device.threads},   {"peak_gflops", d.peak_gflops},
          {"mem_gbps", d.mem_gbps},        {"l1d_bytes", d.caches.l1d_bytes},
          {"l2_bytes", d.caches.l2_bytes}, {"l3_bytes", d.caches.l3_bytes},
          {"vector", DeviceVector(d)}};
}

Result<DeviceInfo> DeviceFromJson(const nlohmann::json& j) {
  DeviceInfo d;
  LOOM_ASSIGN_OR_RETURN(d.device, DeviceFromName(j.at("name").get<std::string>()));
  d.peak_gflops = j.at("peak_gflops");
  d.mem_gbps = j.at("mem_gbps");
  d.caches.l1d_bytes = j.at("l1d_bytes");
  d.caches.l2_bytes = j.at("l2_bytes");
  d.caches.l3_bytes = j.at("l3_bytes");
  return d;
}

Result<Sample> SampleFromJson(const nlohmann::json& j) {
  Sample s;
  s.id = j.at("id");
  LOOM_ASSIGN_OR_RETURN(s.spec, SpecFromJson(j.at("spec")));
  s.shape_key = j.at("shape_key");
  s.instance_key = j.at("instance_key");
  s.device = j.at("device");
  s.latency_s = j.at("latency_s");
  s.runs = j.at("runs");
  s.cv = j.at("cv");
  s.iqr_rel = j.value("iqr_rel", 0.0);
  s.flops = j.at("flops");
  s.bytes = j.at("bytes");
  s.num_nodes = j.at("num_nodes");
  s.leaf_pos = j.at("leaf_pos").get<std::vector<int>>();
  s.leaves = j.at("leaves").get<std::vector<std::vector<float>>>();
  if (s.leaf_pos.size() != s.leaves.size()) {
    return InvalidArgumentError("leaf_pos and leaves differ in length");
  }
  for (const auto& l : s.leaves) {
    if (static_cast<int>(l.size()) != kNumLeafFeatures) {
      return InvalidArgumentError("leaf vector has " + std::to_string(l.size()) + " values, want " +
                                  std::to_string(kNumLeafFeatures));
    }
  }
  if (!(s.latency_s > 0)) return InvalidArgumentError("latency_s must be positive");
  return s;
}

}  // namespace

const DeviceInfo* Dataset::FindDevice(const std::string& name) const {
  for (const DeviceInfo& d : devices) {
    if (d.device.Name() == name) return &d;
  }
  return nullptr;
}

Status WriteDataset(const Dataset& ds, const std::string& path) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::trunc);
  if (!out) return UnavailableError("costmodel: cannot open " + tmp + " for writing");
  nlohmann::json header = {
      {"format", kFormat},
      {"version", 1},
      {"latency_unit", "s"},
      {"leaf_features", LeafFeatureNames()},
      {"device_features", DeviceFeatureNames()},
      {"note", "devices are ISA/thread variants of one host sharing one memory hierarchy"}};
  header["devices"] = nlohmann::json::array();
  for (const DeviceInfo& d : ds.devices) header["devices"].push_back(DeviceToJson(d));
  out << header.dump() << "\n";
  for (const Sample& s : ds.samples) {
    nlohmann::json j = {{"id", s.id},
                        {"spec", SpecToJson(s.spec)},
                        {"shape_key", s.shape_key},
                        {"instance_key", s.instance_key},
                        {"group", s.spec.shape_group},
                        {"device", s.device},
                        {"latency_s", s.latency_s},
                        {"runs", s.runs},
                        {"cv", s.cv},
                        {"iqr_rel", s.iqr_rel},
                        {"flops", s.flops},
                        {"bytes", s.bytes},
                        {"num_nodes", s.num_nodes},
                        {"leaf_pos", s.leaf_pos},
                        {"leaves", s.leaves}};
    out << j.dump() << "\n";
  }
  out.close();
  if (!out) return DataLossError("costmodel: write to " + tmp + " failed");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return UnavailableError("costmodel: cannot rename " + tmp + " to " + path);
  }
  return OkStatus();
}

Result<Dataset> ReadDataset(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("costmodel: cannot open dataset " + path);
  Dataset ds;
  std::string line;
  int64_t lineno = 0;
  auto bad = [&](const std::string& why) {
    return DataLossError("costmodel: " + path + ":" + std::to_string(lineno) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return bad("malformed JSON (truncated file?)");
    try {
      if (lineno == 1) {
        if (j.value("format", "") != kFormat)
          return bad("missing header (format != " + std::string(kFormat) + ")");
        if (j.at("leaf_features").size() != static_cast<size_t>(kNumLeafFeatures)) {
          return bad("header has " + std::to_string(j.at("leaf_features").size()) +
                     " leaf features, this build expects " + std::to_string(kNumLeafFeatures));
        }
        for (const auto& d : j.at("devices")) {
          Result<DeviceInfo> dev = DeviceFromJson(d);
          if (!dev.ok()) return bad(dev.status().message());
          ds.devices.push_back(*dev);
        }
        continue;
      }
      Result<Sample> s = SampleFromJson(j);
      if (!s.ok()) return bad(s.status().message());
      if (ds.FindDevice(s->device) == nullptr) return bad("unknown device '" + s->device + "'");
      ds.samples.push_back(std::move(*s));
    } catch (const nlohmann::json::exception& e) {
      return bad(e.what());
    }
  }
  if (lineno == 0) return DataLossError("costmodel: " + path + " is empty");
  return ds;
}

}  // namespace loom::trace::costmodel
