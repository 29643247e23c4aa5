#include "loom/ckpt/storage/faulty_storage.h"

#include <array>
#include <atomic>

#include "loom/base/file_util.h"

namespace loom::ckpt {
namespace {

class Faults {
 public:
  explicit Faults(std::vector<FaultRule> rules) : rules_(std::move(rules)) {}
  // Counts one occurrence of `op`; returns the rule that fails it, or nullptr.
  const FaultRule* Hit(FaultOp op) {
    const int n = ++counts_[static_cast<int>(op)];
    for (const FaultRule& r : rules_) {
      if (r.op == op && (n == r.nth || (r.every_after && n > r.nth))) return &r;
    }
    return nullptr;
  }

 private:
  std::vector<FaultRule> rules_;
  std::array<std::atomic<int>, 6> counts_{};
};

Status Injected(const FaultRule& r, const char* what, const std::string& path) {
  return ErrnoError(std::string(what) + " (injected fault)", path, r.error);
}

class FaultyWritableFile : public WritableFile {
 public:
  FaultyWritableFile(std::unique_ptr<WritableFile> base, Faults* faults, std::string path)
      : base_(std::move(base)), faults_(faults), path_(std::move(path)) {}
  Status WriteAt(int64_t offset, const void* data, int64_t n) override {
    if (const FaultRule* r = faults_->Hit(FaultOp::kWrite)) {
      if (r->short_write && n > 1) base_->WriteAt(offset, data, n / 2).IgnoreError();
      return Injected(*r, "write", path_);
    }
    return base_->WriteAt(offset, data, n);
  }
  Status Sync() override {
    if (const FaultRule* r = faults_->Hit(FaultOp::kSync)) return Injected(*r, "fsync", path_);
    return base_->Sync();
  }
  Status Close() override { return base_->Close(); }

 private:
  std::unique_ptr<WritableFile> base_;
  Faults* faults_;
  std::string path_;
};

class FaultyReadableFile : public ReadableFile {
 public:
  FaultyReadableFile(std::unique_ptr<ReadableFile> base, Faults* faults, std::string path)
      : base_(std::move(base)), faults_(faults), path_(std::move(path)) {}
  int64_t size() const override { return base_->size(); }
  int64_t bytes_read() const override { return base_->bytes_read(); }
  Status ReadAt(int64_t offset, int64_t n, void* dst) override {
    if (const FaultRule* r = faults_->Hit(FaultOp::kRead)) return Injected(*r, "read", path_);
    return base_->ReadAt(offset, n, dst);
  }

 private:
  std::unique_ptr<ReadableFile> base_;
  Faults* faults_;
  std::string path_;
};

class FaultyStorage : public Storage {
 public:
  FaultyStorage(Storage* base, std::vector<FaultRule> rules)
      : base_(base), faults_(std::move(rules)) {}
  std::string name() const override { return "faulty(" + base_->name() + ")"; }

  Result<std::unique_ptr<WritableFile>> Create(const std::string& path,
                                               const IoOptions& opts) override {
    if (const FaultRule* r = faults_.Hit(FaultOp::kCreate)) return Injected(*r, "create", path);
    LOOM_ASSIGN_OR_RETURN(auto f, base_->Create(path, opts));
    return std::unique_ptr<WritableFile>(new FaultyWritableFile(std::move(f), &faults_, path));
  }
  Result<std::unique_ptr<ReadableFile>> Open(const std::string& path,
                                             const IoOptions& opts) override {
    LOOM_ASSIGN_OR_RETURN(auto f, base_->Open(path, opts));
    return std::unique_ptr<ReadableFile>(new FaultyReadableFile(std::move(f), &faults_, path));
  }
  Status WriteSmallFile(const std::string& path, std::string_view content,
                        const SmallFileOptions& opts) override {
    if (const FaultRule* r = faults_.Hit(FaultOp::kWriteSmall)) {
      return Injected(*r, "write", path);
    }
    return base_->WriteSmallFile(path, content, opts);
  }
  Status SyncDir(const std::string& path) override { return base_->SyncDir(path); }
  Result<std::string> ReadSmallFile(const std::string& path) override {
    return base_->ReadSmallFile(path);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    if (const FaultRule* r = faults_.Hit(FaultOp::kRename)) return Injected(*r, "rename", from);
    return base_->Rename(from, to);
  }
  Status MakeDirs(const std::string& path) override { return base_->MakeDirs(path); }
  Status RemoveAll(const std::string& path) override { return base_->RemoveAll(path); }
  Result<std::vector<std::string>> List(const std::string& dir) override {
    return base_->List(dir);
  }
  bool Exists(const std::string& path) override { return base_->Exists(path); }

 private:
  Storage* base_;
  Faults faults_;
};

}  // namespace

std::unique_ptr<Storage> NewFaultyStorage(Storage* base, std::vector<FaultRule> rules) {
  return std::make_unique<FaultyStorage>(base, std::move(rules));
}

}  // namespace loom::ckpt
