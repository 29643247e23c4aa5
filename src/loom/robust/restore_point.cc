#include "loom/robust/restore_point.h"

#include <algorithm>
#include <filesystem>

#include "loom/ckpt/loader.h"
#include "loom/ckpt/storage.h"

namespace loom::robust {

Result<RestorePoint> PickRestorePoint(const std::vector<std::string>& roots,
                                      std::vector<std::string>* rejected) {
  namespace fs = std::filesystem;
  struct Candidate {
    int64_t step;
    int tier;
    std::string path;
  };
  std::vector<Candidate> candidates;
  for (size_t tier = 0; tier < roots.size(); ++tier) {
    std::error_code ec;
    if (!fs::is_directory(roots[tier], ec)) continue;
    for (const auto& entry : fs::directory_iterator(roots[tier], ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("step_", 0) != 0 || !entry.is_directory()) continue;
      try {
        candidates.push_back({std::stoll(name.substr(5)), static_cast<int>(tier),
                              entry.path().string()});
      } catch (const std::exception&) {
        rejected->push_back(entry.path().string() + ": not a step directory name");
      }
    }
  }
  // Newest step first; at equal steps the faster (earlier) tier first.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.step != b.step ? a.step > b.step : a.tier < b.tier;
  });
  auto storage = ckpt::NewPosixStorage();
  for (const Candidate& c : candidates) {
    auto src = ckpt::OpenCheckpoint(*storage, c.path);
    if (!src.ok()) {
      rejected->push_back(c.path + ": " + src.status().ToString());
      continue;
    }
    auto verified = ckpt::VerifyChecksums(*storage, *src);
    if (!verified.ok()) {
      rejected->push_back(c.path + ": " + verified.status().ToString());
      continue;
    }
    return RestorePoint{c.path, c.step, *verified};
  }
  return RestorePoint{};
}

}  // namespace loom::robust
