// POSIX backend: pwrite/pread with O_DIRECT where possible, buffered otherwise.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "loom/base/file_util.h"
#include "loom/base/huge_buffer.h"
#include "loom/base/logging.h"
#include "loom/base/stream_copy.h"
#include "loom/ckpt/metadata.h"
#include "loom/ckpt/storage.h"

namespace loom::ckpt {
namespace {

bool Aligned(int64_t v) { return v % kAlignment == 0; }
bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlignment == 0; }

void WarnBufferedOnce(const std::string& path) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    LOOM_LOG(WARNING, "ckpt") << "O_DIRECT is not supported for " << path
                              << "; using buffered I/O";
  }
}

// Opens `path` with O_DIRECT; returns -1 with *err = 0 when the filesystem refuses O_DIRECT
// (then the caller reads and writes buffered), -1 with *err = errno on other failures.
int OpenDirect(const std::string& path, int flags, int* err) {
  *err = 0;
  int fd = ::open(path.c_str(), flags | O_DIRECT | O_CLOEXEC, 0644);
  if (fd >= 0) return fd;
  if (errno == EINVAL) {
    WarnBufferedOnce(path);
  } else {
    *err = errno;
  }
  return -1;
}

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, int direct_fd)
      : path_(std::move(path)), fd_(fd), direct_fd_(direct_fd) {}
  ~PosixWritableFile() override { Close().IgnoreError(); }

  Status WriteAt(int64_t offset, const void* data, int64_t n) override {
    const bool direct = direct_fd_ >= 0 && Aligned(offset) && Aligned(n) && Aligned(data);
    const int fd = direct ? direct_fd_ : fd_;
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::pwrite(fd, p, static_cast<size_t>(n), offset);
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoError("write", path_, errno);
      }
      if (w == 0) return ErrnoError("write", path_, EIO);
      p += w;
      offset += w;
      n -= w;
    }
    return OkStatus();
  }

  Status Sync() override {
    if (::fdatasync(fd_) != 0) return ErrnoError("fdatasync", path_, errno);
    return OkStatus();
  }

  Status Close() override {
    Status s;
    if (direct_fd_ >= 0 && ::close(direct_fd_) != 0) s = ErrnoError("close", path_, errno);
    if (fd_ >= 0 && ::close(fd_) != 0 && s.ok()) s = ErrnoError("close", path_, errno);
    fd_ = direct_fd_ = -1;
    return s;
  }

 private:
  std::string path_;
  int fd_;         // buffered: unaligned writes and fdatasync
  int direct_fd_;  // O_DIRECT or -1
};

class PosixReadableFile : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd, int direct_fd, int64_t size)
      : path_(std::move(path)), fd_(fd), direct_fd_(direct_fd), size_(size) {}
  ~PosixReadableFile() override {
    if (direct_fd_ >= 0) ::close(direct_fd_);
    ::close(fd_);
  }
  int64_t size() const override { return size_; }
  int64_t bytes_read() const override { return bytes_read_.load(); }

  Status ReadAt(int64_t offset, int64_t n, void* dst) override {
    if (offset < 0 || n < 0 || offset + n > size_) {
      return DataLossError("read of bytes [" + std::to_string(offset) + ", " +
                           std::to_string(offset + n) + ") from '" + path_ + "' (" +
                           std::to_string(size_) + " bytes): the file is truncated");
    }
    if (direct_fd_ < 0) return Pread(fd_, offset, n, static_cast<char*>(dst));
    if (Aligned(offset) && Aligned(n) && Aligned(dst)) {
      return Pread(direct_fd_, offset, n, static_cast<char*>(dst));
    }
    // Aligned enclosing blocks through a bounce buffer, in pieces of at most kBounce bytes.
    constexpr int64_t kBounce = 8 << 20;
    thread_local HugeBuffer bounce(kBounce);
    char* out = static_cast<char*>(dst);
    while (n > 0) {
      const int64_t lo = offset / kAlignment * kAlignment;
      const int64_t skip = offset - lo;
      const int64_t want = std::min<int64_t>(n, kBounce - skip);
      const int64_t span = std::min<int64_t>((skip + want + kAlignment - 1) / kAlignment *
                                                 kAlignment,
                                             kBounce);
      const int64_t avail = std::min<int64_t>(span, size_ - lo);
      LOOM_RETURN_IF_ERROR(PreadUpTo(direct_fd_, lo, span, avail, bounce.data()));
      StreamingCopy(out, bounce.data() + skip, static_cast<size_t>(want));
      out += want;
      offset += want;
      n -= want;
    }
    return OkStatus();
  }

 private:
  Status Pread(int fd, int64_t offset, int64_t n, char* dst) {
    return PreadUpTo(fd, offset, n, n, dst);
  }
  // Reads until `need` bytes are in (asking for up to `n`; the file may end in between).
  Status PreadUpTo(int fd, int64_t offset, int64_t n, int64_t need, char* dst) {
    int64_t got = 0;
    while (got < need) {
      ssize_t r = ::pread(fd, dst + got, static_cast<size_t>(n - got), offset + got);
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoError("read", path_, errno);
      }
      if (r == 0) {
        return DataLossError("'" + path_ + "' ended at byte " + std::to_string(offset + got) +
                             " while reading to byte " + std::to_string(offset + need) +
                             ": the file is truncated");
      }
      got += r;
      bytes_read_ += r;
    }
    return OkStatus();
  }

  std::string path_;
  int fd_;
  int direct_fd_;
  int64_t size_;
  std::atomic<int64_t> bytes_read_{0};
};

class PosixStorage : public Storage {
 public:
  std::string name() const override { return "posix"; }

  Result<std::unique_ptr<WritableFile>> Create(const std::string& path,
                                               const IoOptions& opts) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoError("cannot create", path, errno);
    int direct_fd = -1;
    if (opts.direct) {
      int err = 0;
      direct_fd = OpenDirect(path, O_WRONLY, &err);
      if (err != 0) {
        ::close(fd);
        return ErrnoError("cannot open (O_DIRECT)", path, err);
      }
    }
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd, direct_fd));
  }

  Result<std::unique_ptr<ReadableFile>> Open(const std::string& path,
                                             const IoOptions& opts) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("cannot open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return ErrnoError("stat", path, err);
    }
    int direct_fd = -1;
    if (opts.direct) {
      int err = 0;
      direct_fd = OpenDirect(path, O_RDONLY, &err);
      if (err != 0) {
        ::close(fd);
        return ErrnoError("cannot open (O_DIRECT)", path, err);
      }
    }
    return std::unique_ptr<ReadableFile>(
        new PosixReadableFile(path, fd, direct_fd, static_cast<int64_t>(st.st_size)));
  }

  Status WriteSmallFile(const std::string& path, std::string_view content,
                        const SmallFileOptions& opts) override {
    if (opts.atomic && opts.sync) return WriteFileAtomic(path, content);
    const std::string target = opts.atomic ? path + ".tmp" : path;
    int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoError("cannot create", target, errno);
    Status s;
    for (size_t at = 0; at < content.size() && s.ok();) {
      ssize_t n = ::write(fd, content.data() + at, content.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) s = ErrnoError("write", target, errno);
      else at += static_cast<size_t>(n);
    }
    if (s.ok() && opts.sync && ::fsync(fd) != 0) s = ErrnoError("fsync", target, errno);
    if (::close(fd) != 0 && s.ok()) s = ErrnoError("close", target, errno);
    if (s.ok() && opts.atomic && ::rename(target.c_str(), path.c_str()) != 0) {
      s = ErrnoError("rename", target, errno);
    }
    return s;
  }
  Result<std::string> ReadSmallFile(const std::string& path) override {
    return ReadFileToString(path);
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoError("rename to '" + to + "' of", from, errno);
    }
    return SyncDir(ParentPath(to));
  }

  Status MakeDirs(const std::string& path) override { return loom::MakeDirs(path); }

  Status RemoveAll(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return ErrnoError("remove", path, ec.value());
    return OkStatus();
  }

  Result<std::vector<std::string>> List(const std::string& dir) override {
    std::error_code ec;
    std::vector<std::string> names;
    for (auto it = std::filesystem::directory_iterator(dir, ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      names.push_back(it->path().filename().string());
    }
    if (ec) return ErrnoError("list", dir, ec.value());
    std::sort(names.begin(), names.end());
    return names;
  }

  bool Exists(const std::string& path) override { return PathExists(path); }

  Status DropCache(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("cannot open", path, errno);
    int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    if (rc != 0) return ErrnoError("posix_fadvise", path, rc);
    return OkStatus();
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("cannot open directory", dir, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return ErrnoError("fsync", dir, err);
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<Storage> NewPosixStorage() { return std::make_unique<PosixStorage>(); }

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  std::string s(a);
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  return s + "/" + std::string(b);
}

std::string ParentPath(std::string_view p) {
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  size_t k = p.rfind('/');
  if (k == std::string_view::npos) return ".";
  if (k == 0) return "/";
  return std::string(p.substr(0, k));
}

}  // namespace loom::ckpt
