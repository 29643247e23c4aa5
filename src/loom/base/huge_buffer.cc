#include "loom/base/huge_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>
#include <utility>

namespace loom {

namespace {
constexpr size_t kHuge = 2 << 20;
}

HugeBuffer::HugeBuffer(size_t bytes, bool prefault) {
  size_ = (bytes + kHuge - 1) / kHuge * kHuge;
  map_bytes_ = size_ + kHuge;  // room to align the start to 2 MiB
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw std::bad_alloc();
  }
  const uintptr_t p = reinterpret_cast<uintptr_t>(map_);
  data_ = reinterpret_cast<char*>((p + kHuge - 1) / kHuge * kHuge);
  ::madvise(data_, size_, MADV_HUGEPAGE);  // before the first touch, or pages stay 4 KiB
  if (prefault) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    for (size_t i = 0; i < size_; i += page) data_[i] = 0;
  }
}

HugeBuffer::~HugeBuffer() { Release(); }

HugeBuffer::HugeBuffer(HugeBuffer&& o) noexcept { *this = std::move(o); }

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& o) noexcept {
  if (this != &o) {
    Release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
  }
  return *this;
}

void HugeBuffer::Release() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

}  // namespace loom
