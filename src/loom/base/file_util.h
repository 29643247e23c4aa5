// Whole-file helpers with loom's durability rule: a file is written to a temporary name in the
// same directory, fsynced, renamed over the target, and the directory fsynced, so a crash leaves
// either the old file or the new one, never half of one.
// Thread-safety: functions are reentrant; concurrent writers of one path race (last rename wins).
#pragma once

#include <string>
#include <string_view>

#include "loom/base/status.h"

namespace loom {

Result<std::string> ReadFileToString(const std::string& path);
Status WriteFileAtomic(const std::string& path, std::string_view content);
// mkdir -p.
Status MakeDirs(const std::string& path);
bool PathExists(const std::string& path);
// A Status for a failed system call on `path`: "<what> '<path>': <strerror>", with the code
// following errno (ENOENT -> kNotFound, EACCES/EPERM -> kPermissionDenied,
// ENOSPC/EDQUOT -> kResourceExhausted, else kInternal).
Status ErrnoError(const std::string& what, const std::string& path, int err);
// Appends one line (plus '\n') with a single write(2) and flushes it to the kernel.
Status AppendLine(const std::string& path, std::string_view line);

}  // namespace loom
