// SaveJob / LoadJob: the on-disk form of a LabelledJob (format in fleet_io.h).
#include "loom/monitor/fleet/sim/fleet_io.h"

#include <sys/stat.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "loom/base/file_util.h"
#include "loom/base/json_util.h"

namespace loom::monitor {
namespace {

using nlohmann::json;

constexpr char kFormat[] = "loom.fleet_job.v1";

static_assert(std::endian::native == std::endian::little,
              "series.f32 is little-endian; add a byte swap for big-endian hosts");

std::string MetaPath(const std::string& dir) { return dir + "/meta.json"; }
std::string SeriesPath(const std::string& dir) { return dir + "/series.f32"; }

Status MetaError(const std::string& path, const std::string& what) {
  return InvalidArgumentError("fleet job meta '" + path + "': " + what);
}

// Reads an integer field within [lo, hi].
Result<int64_t> GetInt(const json& j, const std::string& path, const std::string& where,
                       const char* key, int64_t lo, int64_t hi) {
  auto it = j.find(key);
  if (it == j.end()) return MetaError(path, where + "missing \"" + key + "\"");
  if (!it->is_number_integer()) {
    return MetaError(path, where + "\"" + key + "\" must be an integer, got " + it->dump());
  }
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) {
    return MetaError(path, where + "\"" + key + "\" = " + std::to_string(v) + " outside [" +
                               std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

Result<FaultLabel> FaultFromJson(const json& j, const std::string& path, size_t index, int machines,
                                 int64_t seconds) {
  const std::string where = "faults[" + std::to_string(index) + "]: ";
  if (!j.is_object()) return MetaError(path, where + "must be an object");
  FaultLabel f;
  LOOM_ASSIGN_OR_RETURN(int64_t machine, GetInt(j, path, where, "machine", 0, machines - 1));
  f.machine = static_cast<int>(machine);
  LOOM_ASSIGN_OR_RETURN(f.onset_s, GetInt(j, path, where, "onset_s", 0, seconds - 1));
  LOOM_ASSIGN_OR_RETURN(f.end_s, GetInt(j, path, where, "end_s", f.onset_s + 1, seconds));
  auto type = j.find("type");
  if (type == j.end() || !type->is_string() || type->get<std::string>().empty()) {
    return MetaError(path, where + "\"type\" must be a non-empty string");
  }
  f.type = type->get<std::string>();
  auto alarm = j.find("must_alarm");
  if (alarm == j.end() || !alarm->is_boolean()) {
    return MetaError(path, where + "\"must_alarm\" must be true or false");
  }
  f.must_alarm = alarm->get<bool>();
  auto group = j.find("group");
  if (group == j.end() || !group->is_array()) {
    return MetaError(path, where + "\"group\" must be an array of machine ids");
  }
  for (const json& g : *group) {
    if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() >= machines) {
      return MetaError(path, where + "group member " + g.dump() + " is not a machine in [0, " +
                                 std::to_string(machines) + ")");
    }
    f.group.push_back(g.get<int>());
  }
  return f;
}

}  // namespace

Status SaveJob(const LabelledJob& job, const std::string& dir) {
  const FleetSeries& s = job.series;
  const size_t expected = static_cast<size_t>(s.metrics()) * s.machines * s.seconds;
  if (s.values.size() != expected) {
    return InvalidArgumentError(
        "SaveJob: series has " + std::to_string(s.values.size()) +
        " values, expected metrics x machines x seconds = " + std::to_string(expected));
  }
  json faults = json::array();
  for (const FaultLabel& f : job.faults) {
    faults.push_back({{"machine", f.machine},
                      {"type", f.type},
                      {"onset_s", f.onset_s},
                      {"end_s", f.end_s},
                      {"group", f.group},
                      {"must_alarm", f.must_alarm}});
  }
  const json meta = {{"format", kFormat},      {"metric_names", s.metric_names},
                     {"machines", s.machines}, {"seconds", s.seconds},
                     {"seed", job.seed},       {"series_file", "series.f32"},
                     {"faults", faults},       {"regime_changes_s", job.regime_changes_s}};
  LOOM_RETURN_IF_ERROR(MakeDirs(dir));
  // Series first, meta last: a directory with a meta.json is complete.
  LOOM_RETURN_IF_ERROR(WriteFileAtomic(
      SeriesPath(dir), std::string_view(reinterpret_cast<const char*>(s.values.data()),
                                        s.values.size() * sizeof(float))));
  return WriteFileAtomic(MetaPath(dir), meta.dump(1) + "\n");
}

Result<LabelledJob> LoadJob(const std::string& dir) {
  const std::string meta_path = MetaPath(dir);
  if (!PathExists(meta_path)) {
    return NotFoundError("fleet job '" + dir + "': no meta.json (expected " + meta_path + ")");
  }
  LOOM_ASSIGN_OR_RETURN(json meta, ReadJsonFile(meta_path));
  if (!meta.is_object()) return MetaError(meta_path, "must be a JSON object");
  auto format = meta.find("format");
  if (format == meta.end() || *format != kFormat) {
    return MetaError(meta_path, std::string("\"format\" must be \"") + kFormat + "\", got " +
                                    (format == meta.end() ? "nothing" : format->dump()));
  }
  LabelledJob job;
  FleetSeries& s = job.series;
  auto names = meta.find("metric_names");
  if (names == meta.end() || !names->is_array() || names->empty()) {
    return MetaError(meta_path, "\"metric_names\" must be a non-empty array of strings");
  }
  std::set<std::string> seen;
  for (const json& n : *names) {
    if (!n.is_string() || n.get<std::string>().empty()) {
      return MetaError(meta_path, "\"metric_names\" entry " + n.dump() + " is not a name");
    }
    if (!seen.insert(n.get<std::string>()).second) {
      return MetaError(meta_path, "\"metric_names\" lists " + n.dump() + " twice");
    }
    s.metric_names.push_back(n.get<std::string>());
  }
  LOOM_ASSIGN_OR_RETURN(int64_t machines, GetInt(meta, meta_path, "", "machines", 1, 1 << 20));
  s.machines = static_cast<int>(machines);
  LOOM_ASSIGN_OR_RETURN(s.seconds, GetInt(meta, meta_path, "", "seconds", 1, int64_t{1} << 40));
  auto seed = meta.find("seed");
  if (seed == meta.end() || !seed->is_number_unsigned()) {
    return MetaError(meta_path, "\"seed\" must be a non-negative integer");
  }
  job.seed = seed->get<uint64_t>();
  auto faults = meta.find("faults");
  if (faults == meta.end() || !faults->is_array()) {
    return MetaError(meta_path, "\"faults\" must be an array");
  }
  for (size_t i = 0; i < faults->size(); ++i) {
    LOOM_ASSIGN_OR_RETURN(FaultLabel f,
                          FaultFromJson((*faults)[i], meta_path, i, s.machines, s.seconds));
    job.faults.push_back(std::move(f));
  }
  auto regimes = meta.find("regime_changes_s");
  if (regimes == meta.end() || !regimes->is_array()) {
    return MetaError(meta_path, "\"regime_changes_s\" must be an array");
  }
  for (const json& r : *regimes) {
    if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() > s.seconds) {
      return MetaError(meta_path, "regime change " + r.dump() + " is not a second in [0, " +
                                      std::to_string(s.seconds) + "]");
    }
    job.regime_changes_s.push_back(r.get<int64_t>());
  }

  // The series: exactly metrics x machines x seconds float32 values.
  const std::string series_path = SeriesPath(dir);
  const uint64_t count = static_cast<uint64_t>(s.metrics()) * s.machines * s.seconds;
  const uint64_t want = count * sizeof(float);
  struct stat st;
  if (::stat(series_path.c_str(), &st) != 0) return ErrnoError("stat", series_path, errno);
  if (static_cast<uint64_t>(st.st_size) != want) {
    return DataLossError("fleet job series '" + series_path + "': " + std::to_string(st.st_size) +
                         " bytes, but meta.json's " + std::to_string(s.metrics()) + " metrics x " +
                         std::to_string(s.machines) + " machines x " + std::to_string(s.seconds) +
                         " seconds need " + std::to_string(want) +
                         (static_cast<uint64_t>(st.st_size) < want
                              ? " (truncated)"
                              : " (trailing data or wrong counts)"));
  }
  s.values.resize(count);
  std::FILE* file = std::fopen(series_path.c_str(), "rb");
  if (file == nullptr) return ErrnoError("open", series_path, errno);
  const size_t got = std::fread(s.values.data(), sizeof(float), count, file);
  std::fclose(file);
  if (got != count) {
    return DataLossError("fleet job series '" + series_path + "': read " + std::to_string(got) +
                         " of " + std::to_string(count) + " values");
  }
  return job;
}

}  // namespace loom::monitor
