// TrainCommand: the training command the robust driver relaunches. For `loom train` it pins the
// run directory (so every attempt shares one checkpoint root), knows the checkpoint tiers
// (`ckpt.dir`, `ckpt.persist_dir`) and adds `resume=<step dir>` on restarts. Other commands are
// relaunched unchanged (they must resume by themselves).
//
//   LOOM_ASSIGN_OR_RETURN(TrainCommand c, TrainCommand::Make({"loom", "train", "ckpt.every=20"},
//                                                            "/usr/bin/loom", "runs/x/train"));
//   c.WithResume("runs/x/train/ckpt/step_00000040");  // {..., "resume=runs/x/train/ckpt/..."}
//
// Thread-safety: value type.
#pragma once

#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::robust {

class TrainCommand {
 public:
  // `self_exe` replaces a leading "loom"; `default_run_dir` is added as run_dir=... to a
  // `loom train` command that has none.
  static Result<TrainCommand> Make(std::vector<std::string> argv, const std::string& self_exe,
                                   const std::string& default_run_dir);
  const std::vector<std::string>& argv() const { return argv_; }
  bool is_loom_train() const { return is_train_; }
  // Checkpoint tiers to restore from, fastest first (empty for other commands).
  const std::vector<std::string>& checkpoint_roots() const { return roots_; }
  // The command with resume=<path> (replacing any resume=...); unchanged when `path` is empty
  // or the command is not `loom train`.
  std::vector<std::string> WithResume(const std::string& path) const;

 private:
  std::vector<std::string> argv_;
  bool is_train_ = false;
  std::vector<std::string> roots_;
};

}  // namespace loom::robust
