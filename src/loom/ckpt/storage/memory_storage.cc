// In-memory backend: files are byte strings in a map, directories a set of paths.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "loom/base/mutex.h"
#include "loom/ckpt/storage.h"

namespace loom::ckpt {
namespace {

struct FileData {
  Mutex mu;
  std::string bytes LOOM_GUARDED_BY(mu);
};

class MemoryStorage;

class MemoryWritableFile : public WritableFile {
 public:
  explicit MemoryWritableFile(std::shared_ptr<FileData> f) : f_(std::move(f)) {}
  Status WriteAt(int64_t offset, const void* data, int64_t n) override {
    MutexLock l(&f_->mu);
    if (f_->bytes.size() < static_cast<size_t>(offset + n)) f_->bytes.resize(offset + n);
    std::memcpy(f_->bytes.data() + offset, data, static_cast<size_t>(n));
    return OkStatus();
  }
  Status Sync() override { return OkStatus(); }
  Status Close() override { return OkStatus(); }

 private:
  std::shared_ptr<FileData> f_;
};

class MemoryReadableFile : public ReadableFile {
 public:
  MemoryReadableFile(std::string path, std::shared_ptr<FileData> f)
      : path_(std::move(path)), f_(std::move(f)) {}
  int64_t size() const override {
    MutexLock l(&f_->mu);
    return static_cast<int64_t>(f_->bytes.size());
  }
  Status ReadAt(int64_t offset, int64_t n, void* dst) override {
    MutexLock l(&f_->mu);
    if (offset < 0 || n < 0 || offset + n > static_cast<int64_t>(f_->bytes.size())) {
      return DataLossError("read of bytes [" + std::to_string(offset) + ", " +
                           std::to_string(offset + n) + ") from '" + path_ + "' (" +
                           std::to_string(f_->bytes.size()) + " bytes): the file is truncated");
    }
    std::memcpy(dst, f_->bytes.data() + offset, static_cast<size_t>(n));
    read_ += n;
    return OkStatus();
  }
  int64_t bytes_read() const override { return read_; }

 private:
  std::string path_;
  std::shared_ptr<FileData> f_;
  int64_t read_ = 0;
};

std::string Normalize(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

bool IsUnder(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

class MemoryStorage : public Storage {
 public:
  std::string name() const override { return "memory"; }

  Result<std::unique_ptr<WritableFile>> Create(const std::string& path,
                                               const IoOptions&) override {
    MutexLock l(&mu_);
    const std::string p = Normalize(path);
    LOOM_RETURN_IF_ERROR(CheckParent(p));
    auto f = std::make_shared<FileData>();
    files_[p] = f;
    return std::unique_ptr<WritableFile>(new MemoryWritableFile(f));
  }

  Result<std::unique_ptr<ReadableFile>> Open(const std::string& path, const IoOptions&) override {
    MutexLock l(&mu_);
    auto it = files_.find(Normalize(path));
    if (it == files_.end()) return NotFoundError("cannot open '" + path + "': no such file");
    return std::unique_ptr<ReadableFile>(new MemoryReadableFile(path, it->second));
  }

  Status WriteSmallFile(const std::string& path, std::string_view content,
                        const SmallFileOptions&) override {
    MutexLock l(&mu_);
    const std::string p = Normalize(path);
    LOOM_RETURN_IF_ERROR(CheckParent(p));
    auto f = std::make_shared<FileData>();
    {
      MutexLock fl(&f->mu);
      f->bytes = std::string(content);
    }
    files_[p] = f;
    return OkStatus();
  }

  Result<std::string> ReadSmallFile(const std::string& path) override {
    MutexLock l(&mu_);
    auto it = files_.find(Normalize(path));
    if (it == files_.end()) return NotFoundError("cannot open '" + path + "': no such file");
    MutexLock fl(&it->second->mu);
    return it->second->bytes;
  }

  Status Rename(const std::string& from_in, const std::string& to_in) override {
    MutexLock l(&mu_);
    const std::string from = Normalize(from_in), to = Normalize(to_in);
    LOOM_RETURN_IF_ERROR(CheckParent(to));
    if (auto it = files_.find(from); it != files_.end()) {
      if (dirs_.count(to)) return FailedPreconditionError("rename: '" + to + "' is a directory");
      files_[to] = it->second;
      files_.erase(from);
      return OkStatus();
    }
    if (!dirs_.count(from)) return NotFoundError("rename of '" + from + "': no such file");
    for (const auto& [p, f] : files_) {
      if (IsUnder(p, to)) return FailedPreconditionError("rename: '" + to + "' is not empty");
    }
    std::map<std::string, std::shared_ptr<FileData>> moved;
    for (auto it = files_.begin(); it != files_.end();) {
      if (IsUnder(it->first, from)) {
        moved[to + it->first.substr(from.size())] = it->second;
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
    files_.merge(moved);
    std::set<std::string> dirs;
    for (auto it = dirs_.begin(); it != dirs_.end();) {
      if (*it == from || IsUnder(*it, from)) {
        dirs.insert(to + it->substr(from.size()));
        it = dirs_.erase(it);
      } else {
        ++it;
      }
    }
    dirs_.merge(dirs);
    return OkStatus();
  }

  Status MakeDirs(const std::string& path) override {
    MutexLock l(&mu_);
    std::string p = Normalize(path);
    while (!p.empty() && p != "/" && p != ".") {
      if (files_.count(p)) return FailedPreconditionError("mkdir: '" + p + "' is a file");
      dirs_.insert(p);
      p = ParentPath(p);
    }
    return OkStatus();
  }

  Status RemoveAll(const std::string& path) override {
    MutexLock l(&mu_);
    const std::string p = Normalize(path);
    files_.erase(p);
    dirs_.erase(p);
    std::erase_if(files_, [&](const auto& kv) { return IsUnder(kv.first, p); });
    std::erase_if(dirs_, [&](const std::string& d) { return IsUnder(d, p); });
    return OkStatus();
  }

  Result<std::vector<std::string>> List(const std::string& dir) override {
    MutexLock l(&mu_);
    const std::string d = Normalize(dir);
    if (!dirs_.count(d)) return NotFoundError("list '" + dir + "': no such directory");
    std::set<std::string> names;
    auto add = [&](const std::string& p) {
      if (IsUnder(p, d)) {
        std::string rest = p.substr(d.size() + 1);
        names.insert(rest.substr(0, rest.find('/')));
      }
    };
    for (const auto& [p, f] : files_) add(p);
    for (const std::string& p : dirs_) add(p);
    return std::vector<std::string>(names.begin(), names.end());
  }

  bool Exists(const std::string& path) override {
    MutexLock l(&mu_);
    const std::string p = Normalize(path);
    return files_.count(p) > 0 || dirs_.count(p) > 0;
  }

 private:
  Status CheckParent(const std::string& p) LOOM_REQUIRES(mu_) {
    const std::string parent = ParentPath(p);
    if (parent == "/" || parent == "." || dirs_.count(parent)) return OkStatus();
    return NotFoundError("'" + p + "': parent directory does not exist");
  }

  Mutex mu_;
  std::map<std::string, std::shared_ptr<FileData>> files_ LOOM_GUARDED_BY(mu_);
  std::set<std::string> dirs_ LOOM_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<Storage> NewMemoryStorage() { return std::make_unique<MemoryStorage>(); }

}  // namespace loom::ckpt
