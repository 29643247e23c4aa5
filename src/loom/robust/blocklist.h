// Blocklist: machines the robust driver evicted, persisted as JSON so that a restarted driver
// (or a replacement executor with the same name) never gets them back (DLRover PR#1736).
//
//   LOOM_ASSIGN_OR_RETURN(auto bl, Blocklist::Open(run_dir + "/robust/blocklist.json"));
//   if (!bl->Contains("m3")) ...;
//   LOOM_RETURN_IF_ERROR(bl->Add("m3", "node-17", "stopped: rank 3 state T for 3.0 s"));
//
// The file is replaced atomically (write + rename) on every Add.
// Thread-safety: not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/base/status.h"

namespace loom::robust {

struct BlockedMachine {
  std::string machine;
  std::string host;
  std::string reason;
  int64_t ts_ms = 0;
};

class Blocklist {
 public:
  // A missing file is an empty blocklist; a malformed one is an error naming the file.
  static Result<std::unique_ptr<Blocklist>> Open(const std::string& path);
  bool Contains(const std::string& machine) const;
  Status Add(const std::string& machine, const std::string& host, const std::string& reason);
  const std::vector<BlockedMachine>& entries() const { return entries_; }

 private:
  explicit Blocklist(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::vector<BlockedMachine> entries_;
};

}  // namespace loom::robust
