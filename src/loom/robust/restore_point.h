// RestorePoint: the checkpoint the robust driver restarts from — the newest committed step whose
// checksums verify, across the checkpoint tiers, falling back to older steps and the next tier
// when one does not verify (Megatron-LM#5281: a corrupt checkpoint must not cause a restart loop).
//
//   std::vector<std::string> why;
//   LOOM_ASSIGN_OR_RETURN(RestorePoint p, PickRestorePoint({"/dev/shm/run/ckpt", "/data/ckpt"}, &why));
//   if (!p.path.empty()) args.push_back("resume=" + p.path);
//
// Thread-safety: free function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::robust {

struct RestorePoint {
  std::string path;    // step directory; empty when no checkpoint verifies (fresh start)
  int64_t step = -1;
  int64_t verified_objects = 0;  // chunks and objects whose checksum was re-read and matched
};

// Missing roots are skipped. `rejected` gets one line per step that was skipped and why.
Result<RestorePoint> PickRestorePoint(const std::vector<std::string>& roots,
                                      std::vector<std::string>* rejected);

}  // namespace loom::robust
