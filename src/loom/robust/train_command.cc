#include "loom/robust/train_command.h"

namespace loom::robust {
namespace {

// The value of the last `key=value` argument, or "".
std::string Value(const std::vector<std::string>& argv, const std::string& key) {
  std::string v;
  for (const auto& a : argv) {
    if (a.rfind(key + "=", 0) == 0) v = a.substr(key.size() + 1);
  }
  return v;
}

}  // namespace

Result<TrainCommand> TrainCommand::Make(std::vector<std::string> argv, const std::string& self_exe,
                                        const std::string& default_run_dir) {
  if (argv.empty()) return InvalidArgumentError("empty training command");
  TrainCommand c;
  if (argv[0] == "loom") argv[0] = self_exe;
  c.is_train_ = argv.size() >= 2 && argv[1] == "train";
  if (c.is_train_) {
    for (const auto& a : argv) {
      if (a == "--nproc" || a.rfind("--nproc=", 0) == 0) {
        return InvalidArgumentError(
            "loom robust runs one rank per machine: drop --nproc from the train command and use "
            "`loom robust --machines N`");
      }
    }
    std::string run_dir = Value(argv, "run_dir");
    if (run_dir.empty()) {
      run_dir = default_run_dir;
      argv.push_back("run_dir=" + run_dir);
    }
    const std::string dir = Value(argv, "ckpt.dir");
    c.roots_.push_back(dir.empty() ? run_dir + "/ckpt" : dir);
    const std::string persist = Value(argv, "ckpt.persist_dir");
    if (!persist.empty()) c.roots_.push_back(persist);
  }
  c.argv_ = std::move(argv);
  return c;
}

std::vector<std::string> TrainCommand::WithResume(const std::string& path) const {
  if (!is_train_ || path.empty()) return argv_;
  std::vector<std::string> out;
  for (const auto& a : argv_) {
    if (a.rfind("resume=", 0) != 0) out.push_back(a);
  }
  out.push_back("resume=" + path);
  return out;
}

}  // namespace loom::robust
