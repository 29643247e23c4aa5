// The streaming bound: reading a large trace with ReadOptions::on_event must not grow the
// process's peak RSS with the file size (the parser holds one event; nothing is stored).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "loom/trace/ingest/trace_reader.h"

namespace loom::trace::ingest {
namespace {

// VmHWM (peak resident set) in KiB from /proc/self/status.
int64_t PeakRssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0); false where not permitted.
bool ResetPeakRss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// Writes a Kineto trace of `events` slices (~190 bytes each), every 100th a gloo:all_reduce.
int64_t WriteBigTrace(const std::string& path, int64_t events) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fputs(
      "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 3, \"world_size\": 4},\n"
      "\"traceEvents\": [\n",
      f);
  for (int64_t i = 0; i < events; ++i) {
    const int64_t ts_ns = 1700000000000000000 + i * 1500;
    if (i % 100 == 99) {
      std::fprintf(f,
                   "%s{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"gloo:all_reduce\","
                   "\"pid\":3,\"tid\":2,\"ts\":%lld.%03lld,\"dur\":1.250,\"args\":{\"Input Dims\":"
                   "[[1024]],\"Input type\":[\"float\"]}}",
                   i ? ",\n" : "", static_cast<long long>(ts_ns / 1000),
                   static_cast<long long>(ts_ns % 1000));
    } else {
      std::fprintf(f,
                   "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::op%lld\",\"pid\":3,"
                   "\"tid\":1,\"ts\":%lld.%03lld,\"dur\":1.000,\"args\":{\"External id\":%lld,"
                   "\"Input Dims\":[[64, 64], [64, 64]],\"Input type\":[\"float\", \"float\"]}}",
                   i ? ",\n" : "", static_cast<long long>(i % 50),
                   static_cast<long long>(ts_ns / 1000), static_cast<long long>(ts_ns % 1000),
                   static_cast<long long>(i));
    }
  }
  std::fputs("\n]}\n", f);
  const int64_t size = std::ftell(f);
  std::fclose(f);
  return size;
}

TEST(MemoryBound, StreamingModeDoesNotGrowWithFileSize) {
  const std::string path = "/tmp/loom_ingest_big_" + std::to_string(::getpid()) + ".json";
  constexpr int64_t kEvents = 250000;
  struct Remove {
    std::string p;
    ~Remove() { std::remove(p.c_str()); }
  } remove_at_exit{path};
  const int64_t file_bytes = WriteBigTrace(path, kEvents);
  ASSERT_GT(file_bytes, 40ll << 20);
  const bool reset = ResetPeakRss();
  const int64_t before = PeakRssKiB();
  int64_t seen = 0, comm = 0, bytes = 0, last_ts = 0;
  bool ordered = true;
  ReadOptions o;
  o.on_event = [&](const TraceEvent& e, std::string_view name) {
    ++seen;
    if (e.kind == EventKind::kComm) {
      ++comm;
      bytes += e.bytes;
    }
    ordered = ordered && e.ts_ns >= last_ts && e.rank == 3;
    last_ts = e.ts_ns;
    return OkStatus();
  };
  const auto t0 = std::chrono::steady_clock::now();
  Result<RankTrace> r = ReadTrace(path, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t after = PeakRssKiB();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->events_seen, kEvents);
  EXPECT_TRUE(r->events.empty());
  EXPECT_EQ(seen, kEvents);
  EXPECT_EQ(comm, kEvents / 100);
  EXPECT_EQ(bytes, kEvents / 100 * 4096);
  EXPECT_TRUE(ordered);
  EXPECT_EQ(r->names.size(), 52u);  // "", 50 aten::op<k>, gloo:all_reduce
  const int64_t growth_kib = after - before;
  std::printf(
      "[ memory ] file %.1f MB, %lld events, peak RSS growth %lld KiB (VmHWM reset: %s), "
      "%.2f s (%.0f MB/s)\n",
      file_bytes / 1e6, static_cast<long long>(kEvents), static_cast<long long>(growth_kib),
      reset ? "yes" : "no", secs, file_bytes / 1e6 / secs);
  // Bound: 1 MiB read buffer + the current event + interned names; allow 8 MiB of slack for
  // the allocator. A DOM of this file would need several hundred MB.
  EXPECT_LT(growth_kib, 8 * 1024) << "file " << file_bytes / 1024 << " KiB";

  // Stored mode keeping only communication: O(kept events).
  ResetPeakRss();
  const int64_t before2 = PeakRssKiB();
  ReadOptions keep;
  keep.keep_other = false;
  Result<RankTrace> stored = ReadTrace(path, keep);
  const int64_t growth2 = PeakRssKiB() - before2;
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->events.size(), static_cast<size_t>(kEvents / 100));
  EXPECT_LT(growth2, 8 * 1024);
  std::printf(
      "[ memory ] stored mode, %zu kept events: peak RSS growth %lld KiB; "
      "sizeof(TraceEvent) = %zu\n",
      stored->events.size(), static_cast<long long>(growth2), sizeof(TraceEvent));

  // Control (shows the measurement can see growth): storing every event costs at least
  // kEvents x sizeof(TraceEvent) = 18 MB.
  if (reset) {
    ResetPeakRss();
    const int64_t before3 = PeakRssKiB();
    Result<RankTrace> all = ReadTrace(path);
    const int64_t growth3 = PeakRssKiB() - before3;
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_EQ(all->events.size(), static_cast<size_t>(kEvents));
    EXPECT_GT(growth3, kEvents * static_cast<int64_t>(sizeof(TraceEvent)) / 1024 * 9 / 10);
    std::printf("[ memory ] stored mode, all %zu events: peak RSS growth %lld KiB\n",
                all->events.size(), static_cast<long long>(growth3));
  }
}

}  // namespace
}  // namespace loom::trace::ingest
