// Experiments (d) Comet's communication/compute block split and (e) signal latencies.
//
// (d) One MoE expert layer at W=2 ranks (8 experts; rows sorted by expert, each expert's rows
//     = [local tokens | tokens of the remote rank], padded to 128-row tiles; uniform and Zipf(1.2)
//     routing). The remote rank's token rows live in mapped host memory and the remote rows of
//     the output must go back there. One persistent kernel keeps every block resident; blocks
//     [0, k) are communication blocks (dispatch: pull a 128-row chunk over PCIe with SM loads,
//     release its flag; combine: wait for the row tile's done counter, push its outputs back),
//     the others run the grouped GEMM, local tiles first, remote tiles in chunk order, each
//     acquiring its chunk flag. Sweeping k is Comet's adaptive assignment knob; the best k is
//     what a profile would pick. Baseline "sequential": copy-engine H2D, the grouped GEMM on
//     every block, copy-engine D2H.
// (e) Round trips between a host thread and one GPU thread: host store -> GPU sees it (mapped
//     memory, ld.acquire.sys) -> GPU store -> host sees it; and cuStreamWriteValue32 (host API
//     call -> stream writes device flag) -> GPU sees it -> mapped store -> host sees it.
//     One-way latency is taken as half a round trip (the two clocks are not comparable).
// Limits: one GPU; SM-driven PCIe traffic stands in for NVLink/NVSHMEM puts; k counts blocks,
// not SMs (blocks of both roles may share an SM).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "loom/overlap/cuda/overlap_cuda_common.h"

namespace loom::overlap::cuda {
namespace {

struct MoeLayout {
  int m = 0;                                       // padded rows over all experts
  std::vector<int> local_rows, remote_rows, row0;  // per expert; remote rows follow local rows
  std::vector<GroupedTile> tiles;
  std::vector<CommChunk> chunks;
  int remote_tiles = 0;
};

// Rows per expert for `tokens` routed rows: uniform or Zipf(1.2), rounded up to whole tiles.
std::vector<int> ExpertRows(int experts, int tokens, bool zipf) {
  std::vector<double> weight(experts, 1.0);
  if (zipf) {
    for (int e = 0; e < experts; ++e) weight[e] = 1.0 / std::pow(e + 1.0, 1.2);
  }
  double total = 0;
  for (double x : weight) total += x;
  std::vector<int> rows(experts);
  for (int e = 0; e < experts; ++e) {
    const int want = static_cast<int>(std::lround(tokens * weight[e] / total));
    rows[e] = std::max(kTileM, (want + kTileM - 1) / kTileM * kTileM);
  }
  return rows;
}

MoeLayout BuildLayout(int experts, int tokens_per_rank, bool zipf, int n) {
  MoeLayout l;
  l.local_rows = ExpertRows(experts, tokens_per_rank, zipf);
  l.remote_rows = l.local_rows;  // the remote rank routes alike
  const int tiles_n = n / kTileN;
  for (int e = 0; e < experts; ++e) {
    l.row0.push_back(l.m);
    l.m += l.local_rows[e] + l.remote_rows[e];
  }
  for (int e = 0; e < experts; ++e) {  // local tiles first: no signal needed
    for (int r = 0; r < l.local_rows[e]; r += kTileM) {
      for (int j = 0; j < tiles_n; ++j) l.tiles.push_back({e, l.row0[e] + r, j * kTileN, -1, -1});
    }
  }
  std::vector<CommChunk> combine;
  for (int e = 0; e < experts; ++e) {
    for (int r = 0; r < l.remote_rows[e]; r += kTileM) {
      const int row0 = l.row0[e] + l.local_rows[e] + r;
      const int id = l.remote_tiles++;
      for (int j = 0; j < tiles_n; ++j) l.tiles.push_back({e, row0, j * kTileN, id, id});
      l.chunks.push_back({kDispatch, row0, kTileM, id, 0});
      combine.push_back({kCombine, row0, kTileM, id, static_cast<unsigned>(tiles_n)});
    }
  }
  l.chunks.insert(l.chunks.end(), combine.begin(), combine.end());
  return l;
}

template <typename T>
T* Upload(const std::vector<T>& v, DeviceBuffer& buf) {
  LOOM_CUDA_OK(cudaMemcpy(buf.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  LOOM_CUDA_OK(cudaDeviceSynchronize());  // a pageable H2D copy may return before it lands
  return buf.as<T>();
}

std::string RunCometCase(Context& ctx, bool zipf) {
  const ElemType type = ElemType::kBF16;
  const int experts = 8, tokens = 2048 * 2 /*top-2*/, k = 4096, n = 2048;
  const MoeLayout l = BuildLayout(experts, tokens, zipf, n);
  const int grid = ctx.prop.multiProcessorCount * GroupedSplitBlocksPerSm(type);
  DeviceBuffer a(static_cast<size_t>(l.m) * k * 2), b(static_cast<size_t>(experts) * k * n * 2);
  DeviceBuffer c(static_cast<size_t>(l.m) * n * 4), c_ref(c.bytes());
  DeviceBuffer tiles(l.tiles.size() * sizeof(GroupedTile));
  DeviceBuffer chunks(l.chunks.size() * sizeof(CommChunk));
  DeviceBuffer signals(2 * static_cast<size_t>(l.remote_tiles) * sizeof(uint32_t));
  PinnedBuffer a_host(a.bytes()), c_host(c.bytes());
  FillHost<__nv_bfloat16>(a_host.host<__nv_bfloat16>(), static_cast<size_t>(l.m) * k, 51, 0);
  LaunchFill(type, a.get(), static_cast<size_t>(l.m) * k, 51, 0, ctx.comp);  // local rows valid
  LaunchFill(type, b.get(), static_cast<size_t>(experts) * k * n, 52, 0, ctx.comp);
  GroupedSplitArgs g;
  g.a_host = a_host.device<void>();
  g.a = a.get();
  g.b = b.get();
  g.c = c.as<float>();
  g.c_host = c_host.device<float>();
  g.m = l.m;
  g.n = n;
  g.k = k;
  g.tiles = Upload(l.tiles, tiles);
  g.num_tiles = static_cast<int>(l.tiles.size());
  g.chunks = Upload(l.chunks, chunks);
  g.num_chunks = static_cast<int>(l.chunks.size());
  g.flags = signals.as<uint32_t>();
  g.counters = signals.as<uint32_t>() + l.remote_tiles;
  g.error = ctx.error;
  auto copy_rows = [&](bool to_device) {
    for (int e = 0; e < experts; ++e) {
      const int row0 = l.row0[e] + l.local_rows[e];
      if (to_device) {
        const size_t off = static_cast<size_t>(row0) * k * 2;
        LOOM_CUDA_OK(cudaMemcpyAsync(a.as<char>() + off, a_host.host<char>() + off,
                                     static_cast<size_t>(l.remote_rows[e]) * k * 2,
                                     cudaMemcpyHostToDevice, ctx.comp));
      } else {
        const size_t off = static_cast<size_t>(row0) * n * 4;
        LOOM_CUDA_OK(cudaMemcpyAsync(c_host.host<char>() + off, c.as<char>() + off,
                                     static_cast<size_t>(l.remote_rows[e]) * n * 4,
                                     cudaMemcpyDeviceToHost, ctx.comp));
      }
    }
  };
  GroupedSplitArgs plain = g;
  plain.comm_blocks = 0;
  plain.use_signals = false;
  auto comp_only = [&] {
    return TimeOnComp(ctx, [&] { LaunchGroupedSplit(type, plain, grid, ctx.comp); });
  };
  auto comm_only = [&] {
    return TimeOnComp(ctx, [&] {
      copy_rows(true);
      copy_rows(false);
    });
  };
  auto sequential = [&] {
    return TimeOnComp(ctx, [&] {
      copy_rows(true);
      LaunchGroupedSplit(type, plain, grid, ctx.comp);
      copy_rows(false);
    });
  };
  auto split = [&](int comm_blocks) {
    GroupedSplitArgs args = g;
    args.comm_blocks = comm_blocks;
    LOOM_CUDA_OK(cudaMemsetAsync(signals.get(), 0, signals.bytes(), ctx.comp));
    return TimeOnComp(ctx, [&] { LaunchGroupedSplit(type, args, grid, ctx.comp); });
  };
  // Reference with every row resident, then a value check of sequential and every k.
  copy_rows(true);
  GroupedSplitArgs ref = plain;
  ref.c = c_ref.as<float>();
  LaunchGroupedSplit(type, ref, grid, ctx.comp);
  std::vector<int> ks = ctx.quick ? std::vector<int>{4, 8, 16, 32}
                                  : std::vector<int>{1, 2, 4, 8, 12, 16, 24, 32, 48, 64};
  ks.erase(std::remove_if(ks.begin(), ks.end(), [&](int x) { return x >= grid / 2; }), ks.end());
  const char* routing = zipf ? "zipf" : "uniform";
  bool ok = true;
  auto check = [&](const std::string& what, const std::function<void()>& run) {
    LOOM_CUDA_OK(cudaMemsetAsync(c.get(), 0xFF, c.bytes(), ctx.comp));
    for (int e = 0; e < experts; ++e) {  // poison the remote rows of A on the device
      const size_t off = static_cast<size_t>(l.row0[e] + l.local_rows[e]) * k * 2;
      LOOM_CUDA_OK(cudaMemsetAsync(a.as<char>() + off, 0xFF,
                                   static_cast<size_t>(l.remote_rows[e]) * k * 2, ctx.comp));
    }
    LOOM_CUDA_OK(cudaStreamSynchronize(ctx.comp));
    std::fill(c_host.host<float>(), c_host.host<float>() + static_cast<size_t>(l.m) * n, NAN);
    run();
    const bool timely = ctx.TakeError("Comet split " + what);
    unsigned long long bad = CountMismatches(ctx, c.as<float>(), c_ref.as<float>(), 0, l.m, n);
    for (int e = 0; e < experts; ++e) {
      bad += CountMismatches(ctx, c_host.device<float>(), c_ref.as<float>(),
                             l.row0[e] + l.local_rows[e], l.remote_rows[e], n);
    }
    if (!timely || bad != 0) {
      ok = false;
      ctx.Fail(std::string("Comet split ") + routing + " " + what + ": " + std::to_string(bad) +
               " outputs differ");
    }
  };
  check("sequential", [&] { sequential(); });
  for (int kb : ks) check("k=" + std::to_string(kb), [&] { split(kb); });
  if (ctx.wait_failed) {  // a lost signal: timing the sweep would only time timeouts
    return JsonObject().Str("routing", routing).Bool("results_match_reference", false).Dump();
  }

  std::vector<double> t_comp, t_comm, t_seq;
  std::vector<std::vector<double>> t_split(ks.size());
  for (int r = 0; r < ctx.reps; ++r) {
    t_comp.push_back(comp_only());
    t_comm.push_back(comm_only());
    t_seq.push_back(sequential());
    for (size_t i = 0; i < ks.size(); ++i) t_split[i].push_back(split(ks[i]));
  }
  if (!ctx.TakeError(std::string("Comet split timing ") + routing)) ok = false;
  const Summary comp = Summarize(t_comp), comm = Summarize(t_comm), seq = Summarize(t_seq);
  std::vector<std::string> sweep;
  size_t best = 0;
  std::printf(
      "  %-7s M=%d K=%d N=%d grid=%d blocks: t_comp %.3f  t_comm(copy engine) %.3f  "
      "sequential %.3f ms\n",
      routing, l.m, k, n, grid, comp.median, comm.median, seq.median);
  std::printf("  %-7s %4s %9s %7s %7s\n", "", "k", "ms", "E", "x seq");
  for (size_t i = 0; i < ks.size(); ++i) {
    const Summary s = Summarize(t_split[i]);
    if (s.median < Summarize(t_split[best]).median) best = i;
    const double e = OverlapEfficiency(comp.median, comm.median, s.median);
    std::printf("  %-7s %4d %9.3f %7.2f %7.2f\n", "", ks[i], s.median, e, seq.median / s.median);
    sweep.push_back(JsonObject()
                        .Int("comm_blocks", ks[i])
                        .Stats("ms", s)
                        .Num("efficiency", e)
                        .Num("speedup_vs_sequential", seq.median / s.median)
                        .Dump());
  }
  const double best_ms = ks.empty() ? 0 : Summarize(t_split[best]).median;
  return JsonObject()
      .Str("routing", routing)
      .Int("w", 2)
      .Int("experts", experts)
      .Int("m", l.m)
      .Int("k", k)
      .Int("n", n)
      .Int("grid_blocks", grid)
      .Int("remote_row_tiles", l.remote_tiles)
      .Stats("t_comp_ms", comp)
      .Stats("t_comm_copy_engine_ms", comm)
      .Stats("sequential_ms", seq)
      .Raw("sweep", JsonArray(sweep))
      .Int("best_comm_blocks", ks.empty() ? 0 : ks[best])
      .Num("best_ms", best_ms)
      .Num("best_speedup_vs_sequential", best_ms > 0 ? seq.median / best_ms : 0)
      .Bool("results_match_reference", ok)
      .Dump();
}

}  // namespace

std::string RunCometSplit(Context& ctx) {
  std::printf(
      "\n(d) Comet split: k communication blocks (mapped host memory <-> device) + grouped "
      "GEMM on the rest; W=2, 8 experts, top-2\n");
  std::vector<std::string> cases;
  for (bool zipf : {false, true}) {
    if (zipf && ctx.quick) break;
    if (ctx.ShouldStop(zipf ? "Comet split zipf" : "Comet split uniform")) break;
    cases.push_back(RunCometCase(ctx, zipf));
  }
  return JsonArray(cases);
}

namespace {

uint32_t LoadAcquire(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void StoreRelease(uint32_t* p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

// Host side of one round-trip run: `signal(i)` makes the GPU see value base + i; the host then
// spins (bounded) until the GPU's mapped echo reaches it. Returns microseconds per round trip, or
// a negative value on a host-side timeout.
template <typename Signal>
double HostRoundTrips(const uint32_t* echo, uint32_t base, int iters, Signal&& signal) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  for (int i = 1; i <= iters; ++i) {
    signal(base + static_cast<uint32_t>(i));
    const auto deadline = Clock::now() + std::chrono::seconds(2);
    while (LoadAcquire(echo) < base + static_cast<uint32_t>(i)) {
      if (Clock::now() > deadline) return -1;
    }
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
}

}  // namespace

std::string RunSignalLatency(Context& ctx) {
  const int iters_mapped = 1000, iters_stream = 200;
  PinnedBuffer flags(256);  // h2d at byte 0, d2h at byte 128 (separate lines)
  uint32_t* h2d = flags.host<uint32_t>();
  uint32_t* d2h = flags.host<uint32_t>() + 32;
  std::memset(flags.host<void>(), 0, flags.bytes());
  DeviceBuffer dev_flag(sizeof(uint32_t)), device_ns(sizeof(unsigned long long));
  LOOM_CUDA_OK(cudaMemset(dev_flag.get(), 0, sizeof(uint32_t)));
  LOOM_CUDA_OK(cudaDeviceSynchronize());
  std::vector<double> mapped_us, mapped_dev_us, stream_us;
  uint32_t base = 0;  // h2d, d2h and dev_flag only ever increase: no resets between runs
  bool ok = true;
  for (int r = 0; r < ctx.reps; ++r) {
    LaunchPingPongMapped(flags.device<uint32_t>(), flags.device<uint32_t>() + 32, base,
                         iters_mapped, device_ns.as<unsigned long long>(), ctx.error, 500000000ll,
                         ctx.comp);
    const double us =
        HostRoundTrips(d2h, base, iters_mapped, [&](uint32_t v) { StoreRelease(h2d, v); });
    ok = ctx.TakeError("mapped ping-pong") && us > 0 && ok;
    unsigned long long ns = 0;
    LOOM_CUDA_OK(cudaMemcpy(&ns, device_ns.get(), sizeof(ns), cudaMemcpyDeviceToHost));
    if (us > 0) {
      mapped_us.push_back(us);
      mapped_dev_us.push_back(static_cast<double>(ns) / 1e3 / iters_mapped);
    }
    base += iters_mapped;

    LaunchStreamWriteEcho(dev_flag.as<uint32_t>(), flags.device<uint32_t>() + 32, base,
                          iters_stream, device_ns.as<unsigned long long>(), ctx.error, 500000000ll,
                          ctx.comp);
    const double us2 = HostRoundTrips(d2h, base, iters_stream, [&](uint32_t v) {
      LOOM_CU_OK(cuStreamWriteValue32(reinterpret_cast<CUstream>(ctx.copy),
                                      reinterpret_cast<CUdeviceptr>(dev_flag.get()), v,
                                      CU_STREAM_WRITE_VALUE_DEFAULT));
    });
    ok = ctx.TakeError("stream-write echo") && us2 > 0 && ok;
    if (us2 > 0) stream_us.push_back(us2);
    base += iters_stream;
  }
  if (!ok) ctx.Fail("signal latency: a round trip timed out");
  const Summary sm = Summarize(mapped_us), sd = Summarize(mapped_dev_us), ss = Summarize(stream_us);
  std::printf(
      "\n(e) signal latency (us): mapped round trip %.2f (one way ~%.2f; GPU-side %.2f), "
      "cuStreamWriteValue32 -> GPU -> mapped echo %.2f\n",
      sm.median, sm.median / 2, sd.median, ss.median);
  return JsonObject()
      .Int("iters_mapped", iters_mapped)
      .Int("iters_stream_write", iters_stream)
      .Stats("mapped_round_trip_us", sm)
      .Num("mapped_one_way_us", sm.median / 2)
      .Stats("mapped_round_trip_device_clock_us", sd)
      .Stats("stream_write_round_trip_us", ss)
      .Bool("ok", ok)
      .Dump();
}

}  // namespace loom::overlap::cuda
