// StreamingCopy: memcpy for large buffers that will not be read again soon (checkpoint snapshots
// and loads), with non-temporal stores: the destination is written without first being read
// into the cache, which roughly halves the memory traffic of a copy that misses the cache.
// Small copies (< 256 KiB) use memcpy. Works for any alignment.
// Thread-safety: reentrant; the caller owns both ranges (they must not overlap).
#pragma once

#include <cstddef>

namespace loom {

void StreamingCopy(void* dst, const void* src, size_t n);

}  // namespace loom
