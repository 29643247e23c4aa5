// HugeBuffer: a large, 2 MiB-aligned anonymous mapping backed by transparent huge pages where the
// kernel allows (madvise before first touch), optionally pre-faulted.
//
// Used for buffers that take part in direct I/O (checkpoint snapshot pool, read bounce buffers):
// the kernel pins user pages for every O_DIRECT request, and pinning 2 MiB pages instead of 4 KiB
// ones made 16 MiB O_DIRECT writes ~1.5x faster on the build machine.
// Thread-safety: owns its memory; not shared.
#pragma once

#include <cstddef>

namespace loom {

class HugeBuffer {
 public:
  HugeBuffer() = default;
  // Throws std::bad_alloc if the mapping fails. `prefault`: touch every page now.
  explicit HugeBuffer(size_t bytes, bool prefault = true);
  ~HugeBuffer();
  HugeBuffer(HugeBuffer&& o) noexcept;
  HugeBuffer& operator=(HugeBuffer&& o) noexcept;
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release();
  char* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
};

}  // namespace loom
