// Experiments (a) overlap tax, (b) AG+GEMM with host memory as the remote ranks and (c) GEMM+RS
// with an epilogue storing to mapped host memory, plus the host-reference value checks.
//
// (a) The same tile GEMM with and without its AG flag waits (all flags pre-set) against
//     cublasGemmEx on the same shape: the tax of the signal checks and the gap to cuBLAS.
// (b) W virtual ranks; shard 0 is local (device memory), shards 1..W-1 are "remote" and live in
//     pinned host memory. A second stream pulls them with cudaMemcpyAsync (the copy engine over
//     PCIe), S chunks per shard, each followed by cuStreamWriteValue32 of that chunk's flag.
//     sequential = copy all, then one GEMM; decomposed = one GEMM per shard after its copy
//     (PyTorch async-TP style); fused = one GEMM whose tiles spin (ld.acquire.gpu) on their
//     chunk's flag, local shard first. PCIe plays the link: R = t_comm / t_comp is set by N.
// (c) W segments of the output; segment 0 is own (device memory), the others belong to "remote
//     ranks" in pinned host memory. sequential = GEMM, then one D2H copy; decomposed = one GEMM
//     per segment (rank+1 first, own last), each remote segment copied D2H on the second stream
//     while the next computes; fused = one GEMM whose epilogue stores remote tiles straight to
//     mapped host memory (SM-driven remote store, like FLUX on Ampere). No reduction: the
//     receivers' sum of W partials does not exist on one GPU.
// Limits: one GPU. PCIe (about 50 GB/s per direction) stands in for NVLink; NVSHMEM, multi-GPU
// reductions and NVSwitch are not measured. fp32 outputs (twice the bytes of bf16 outputs).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "loom/overlap/cuda/overlap_cuda_common.h"

namespace loom::overlap::cuda {
namespace {

double Tflops(int m, int n, int k, double ms) { return 2.0 * m * n * k / (ms * 1e-3) / 1e12; }

template <typename T>
std::vector<float> HostValues(size_t count, uint32_t seed) {
  std::vector<T> v(count);
  FillHost<T>(v.data(), count, seed, 0);
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(v[i]);
  return out;
}

// Checks loom's GEMM (plain; flags + rotation + RS epilogue) and cuBLAS against a double
// precision host reference on a small shape that is not square.
template <typename T>
std::vector<std::string> CheckOneType(Context& ctx, ElemType type) {
  const int m = 384, n = 256, k = 160;
  const std::vector<float> a = HostValues<T>(static_cast<size_t>(m) * k, 11);
  const std::vector<float> b = HostValues<T>(static_cast<size_t>(k) * n, 12);
  std::vector<float> ref(static_cast<size_t>(m) * n);
  double max_ref = 0;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += static_cast<double>(a[i * k + p]) * b[p * n + j];
      ref[static_cast<size_t>(i) * n + j] = static_cast<float>(sum);
      max_ref = std::max(max_ref, std::fabs(sum));
    }
  }
  DeviceBuffer da(a.size() * sizeof(T)), db(b.size() * sizeof(T)), dc(ref.size() * 4);
  DeviceBuffer flags(16 * sizeof(uint32_t));
  PinnedBuffer remote(ref.size() * 4);
  LaunchFill(type, da.get(), a.size(), 11, 0, ctx.comp);
  LaunchFill(type, db.get(), b.size(), 12, 0, ctx.comp);
  std::vector<float> got(ref.size());
  std::vector<std::string> out;
  const double tol = 1e-4 * (1.0 + max_ref);  // exact products, fp32 sums of 160 terms
  auto record = [&](const char* name, const std::vector<float>& result) {
    const Diff d = Compare(result.data(), ref.data(), ref.size());
    const bool ok = d.non_finite == 0 && d.max_abs <= tol;
    if (!ok) ctx.Fail(std::string("check ") + name + " " + ElemTypeName(type) + " failed");
    std::printf("  check %-22s %-4s max|err| %.3g (tol %.3g) %s\n", name, ElemTypeName(type),
                d.max_abs, tol, ok ? "ok" : "FAILED");
    out.push_back(JsonObject()
                      .Str("name", name)
                      .Str("dtype", ElemTypeName(type))
                      .Int("m", m)
                      .Int("n", n)
                      .Int("k", k)
                      .Num("max_abs_err", d.max_abs)
                      .Int("non_finite", static_cast<long long>(d.non_finite))
                      .Num("tol", tol)
                      .Bool("ok", ok)
                      .Dump());
  };
  TileGemmArgs args;
  args.a = da.get();
  args.b = db.get();
  args.c = dc.as<float>();
  args.m = m;
  args.n = n;
  args.k = k;
  args.error = ctx.error;
  LaunchTileGemm(type, args, ctx.comp);
  LOOM_CUDA_OK(cudaStreamSynchronize(ctx.comp));
  LOOM_CUDA_OK(cudaMemcpy(got.data(), dc.get(), dc.bytes(), cudaMemcpyDeviceToHost));
  record("loom_gemm", got);

  // Flags pre-set, rotated tile order, rows outside [128, 256) stored to mapped host memory.
  const uint32_t epoch = ctx.NextEpoch();
  LaunchSetFlags(flags.as<uint32_t>(), 16, epoch, ctx.comp);
  LOOM_CUDA_OK(cudaMemsetAsync(dc.get(), 0xFF, dc.bytes(), ctx.comp));
  std::fill(remote.host<float>(), remote.host<float>() + ref.size(), NAN);
  args.flags = flags.as<uint32_t>();
  args.rows_per_flag = 64;
  args.epoch = epoch;
  args.c_remote = remote.device<float>();
  args.own_row0 = 128;
  args.own_rows = 128;
  args.row_tile_rotation = 2;
  LaunchTileGemm(type, args, ctx.comp);
  ctx.TakeError("check loom_gemm_signals");
  LOOM_CUDA_OK(cudaMemcpy(got.data(), dc.get(), dc.bytes(), cudaMemcpyDeviceToHost));
  for (int i = 0; i < m; ++i) {
    if (i >= 128 && i < 256) continue;
    std::copy_n(remote.host<float>() + static_cast<size_t>(i) * n, n,
                got.begin() + static_cast<size_t>(i) * n);
  }
  record("loom_gemm_signals_rs", got);

  CublasGemm(ctx, type, da.get(), db.get(), dc.as<float>(), m, n, k);
  LOOM_CUDA_OK(cudaStreamSynchronize(ctx.comp));
  LOOM_CUDA_OK(cudaMemcpy(got.data(), dc.get(), dc.bytes(), cudaMemcpyDeviceToHost));
  record("cublas_gemm", got);
  return out;
}

}  // namespace

std::string RunChecks(Context& ctx) {
  std::printf("checks against a host reference (M=384 N=256 K=160)\n");
  std::vector<std::string> rows = CheckOneType<__half>(ctx, ElemType::kF16);
  for (std::string& r : CheckOneType<__nv_bfloat16>(ctx, ElemType::kBF16)) rows.push_back(r);
  return JsonArray(rows);
}

std::string RunOverlapTax(Context& ctx) {
  struct Shape {
    ElemType type;
    int m, n, k;
  };
  std::vector<Shape> shapes = {{ElemType::kBF16, 8192, 4096, 4096}};
  if (!ctx.quick) {
    shapes.push_back({ElemType::kBF16, 8192, 1024, 4096});
    shapes.push_back({ElemType::kBF16, 8192, 8192, 8192});
    shapes.push_back({ElemType::kF16, 8192, 4096, 4096});
  }
  std::printf("\n(a) overlap tax: loom tile GEMM, flags pre-set, vs cuBLAS (ms, TFLOP/s)\n");
  std::printf("  %-5s %6s %6s %6s | %9s %9s %9s | %7s %7s | %8s %8s\n", "dtype", "M", "N", "K",
              "loom", "loom+flg", "cublas", "loomTF", "cublTF", "flag tax", "vs cubl");
  std::vector<std::string> rows;
  for (const Shape& s : shapes) {
    DeviceBuffer a(static_cast<size_t>(s.m) * s.k * 2), b(static_cast<size_t>(s.k) * s.n * 2);
    DeviceBuffer c(static_cast<size_t>(s.m) * s.n * 4), c_blas(c.bytes());
    DeviceBuffer flags(static_cast<size_t>(s.m / kTileM) * sizeof(uint32_t));
    LaunchFill(s.type, a.get(), static_cast<size_t>(s.m) * s.k, 21, 0, ctx.comp);
    LaunchFill(s.type, b.get(), static_cast<size_t>(s.k) * s.n, 22, 0, ctx.comp);
    const uint32_t epoch = ctx.NextEpoch();
    LaunchSetFlags(flags.as<uint32_t>(), s.m / kTileM, epoch, ctx.comp);
    TileGemmArgs plain;
    plain.a = a.get();
    plain.b = b.get();
    plain.c = c.as<float>();
    plain.m = s.m;
    plain.n = s.n;
    plain.k = s.k;
    plain.error = ctx.error;
    TileGemmArgs flagged = plain;
    flagged.flags = flags.as<uint32_t>();
    flagged.rows_per_flag = kTileM;
    flagged.epoch = epoch;
    auto run_plain = [&] { LaunchTileGemm(s.type, plain, ctx.comp); };
    auto run_flagged = [&] { LaunchTileGemm(s.type, flagged, ctx.comp); };
    auto run_blas = [&] {
      CublasGemm(ctx, s.type, a.get(), b.get(), c_blas.as<float>(), s.m, s.n, s.k);
    };
    run_plain();  // warm-up (and cuBLAS heuristics)
    run_flagged();
    run_blas();
    std::vector<double> t_plain, t_flagged, t_blas, tax;
    for (int r = 0; r < ctx.reps; ++r) {
      t_plain.push_back(TimeOnComp(ctx, run_plain));
      t_flagged.push_back(TimeOnComp(ctx, run_flagged));
      t_blas.push_back(TimeOnComp(ctx, run_blas));
      tax.push_back(t_flagged.back() / t_plain.back() - 1.0);
    }
    ctx.TakeError("overlap tax");
    // loom vs cuBLAS on the full shape (summation orders differ: tolerance, not equality).
    std::vector<float> h_loom(static_cast<size_t>(s.m) * s.n), h_blas(h_loom.size());
    LOOM_CUDA_OK(cudaMemcpy(h_loom.data(), c.get(), c.bytes(), cudaMemcpyDeviceToHost));
    LOOM_CUDA_OK(cudaMemcpy(h_blas.data(), c_blas.get(), c.bytes(), cudaMemcpyDeviceToHost));
    const Diff d = Compare(h_loom.data(), h_blas.data(), h_loom.size());
    const double tol = 2e-5 * s.k;  // |C| ~ sqrt(K)/3; fp32 sums in different orders
    const bool ok = d.non_finite == 0 && d.max_abs <= tol;
    if (!ok) ctx.Fail("overlap tax: loom GEMM differs from cuBLAS beyond tolerance");
    const Summary sp = Summarize(t_plain), sf = Summarize(t_flagged), sb = Summarize(t_blas);
    const double tax_med = Summarize(tax).median;
    std::printf("  %-5s %6d %6d %6d | %9.3f %9.3f %9.3f | %7.1f %7.1f | %7.2f%% %8.2f%s\n",
                ElemTypeName(s.type), s.m, s.n, s.k, sp.median, sf.median, sb.median,
                Tflops(s.m, s.n, s.k, sp.median), Tflops(s.m, s.n, s.k, sb.median), 100.0 * tax_med,
                sb.median / sp.median, ok ? "" : "  MISMATCH");
    rows.push_back(JsonObject()
                       .Str("dtype", ElemTypeName(s.type))
                       .Int("m", s.m)
                       .Int("n", s.n)
                       .Int("k", s.k)
                       .Stats("loom_ms", sp)
                       .Stats("loom_flags_preset_ms", sf)
                       .Stats("cublas_ms", sb)
                       .Num("loom_tflops", Tflops(s.m, s.n, s.k, sp.median))
                       .Num("cublas_tflops", Tflops(s.m, s.n, s.k, sb.median))
                       .Num("flag_tax", tax_med)
                       .Num("loom_fraction_of_cublas", sb.median / sp.median)
                       .Num("max_abs_diff_vs_cublas", d.max_abs)
                       .Bool("matches_cublas", ok)
                       .Dump());
  }
  return JsonArray(rows);
}

namespace {

// Per-repetition samples of one (shape, S) point of an overlap experiment.
struct OverlapSamples {
  std::vector<double> comp, comm, seq, dec, fused;
};

// Prints one table row and returns the JSON of an overlap point: medians, per-repetition
// efficiencies and the closed-form ideal times of spec §7.
std::string ReportOverlap(const char* op, int w, int m, int n, int k, int splits,
                          const OverlapSamples& s, double ideal_dec, double ideal_fused, bool ok) {
  std::vector<double> e_seq, e_dec, e_fused;
  for (size_t r = 0; r < s.comp.size(); ++r) {
    e_seq.push_back(OverlapEfficiency(s.comp[r], s.comm[r], s.seq[r]));
    e_dec.push_back(OverlapEfficiency(s.comp[r], s.comm[r], s.dec[r]));
    e_fused.push_back(OverlapEfficiency(s.comp[r], s.comm[r], s.fused[r]));
  }
  const Summary comp = Summarize(s.comp), comm = Summarize(s.comm), seq = Summarize(s.seq),
                dec = Summarize(s.dec), fused = Summarize(s.fused);
  const double r_ratio = comm.median / comp.median;
  const double e_f = Summarize(e_fused).median;
  std::printf(
      "  %6d %5d %5d %3d | %5.2f | %7.3f %7.3f | %7.3f %7.3f %7.3f | %5.2f %5.2f | %5.2f %5.2f%s\n",
      m, n, k, splits, r_ratio, comp.median, comm.median, seq.median, dec.median, fused.median,
      Summarize(e_dec).median, e_f, seq.median / fused.median, dec.median / fused.median,
      ok ? "" : "  WRONG");
  return JsonObject()
      .Str("op", op)
      .Int("w", w)
      .Int("m", m)
      .Int("n", n)
      .Int("k", k)
      .Int("splits", splits)
      .Num("r", r_ratio)
      .Stats("t_comp_ms", comp)
      .Stats("t_comm_ms", comm)
      .Stats("sequential_ms", seq)
      .Stats("decomposed_ms", dec)
      .Stats("fused_ms", fused)
      .Num("efficiency_sequential", Summarize(e_seq).median)
      .Num("efficiency_decomposed", Summarize(e_dec).median)
      .Num("efficiency_fused", e_f)
      .Num("fused_vs_sequential", seq.median / fused.median)
      .Num("fused_vs_decomposed", dec.median / fused.median)
      .Num("ideal_decomposed_ms", ideal_dec)
      .Num("ideal_fused_ms", ideal_fused)
      .Num("fused_fraction_of_ideal", ideal_fused / fused.median)
      .Bool("results_match_reference", ok)
      .Dump();
}

void PrintOverlapHeader() {
  std::printf("  %6s %5s %5s %3s | %5s | %7s %7s | %7s %7s %7s | %5s %5s | %5s %5s\n", "M", "N",
              "K", "S", "R", "t_comp", "t_comm", "seq", "decomp", "fused", "E_dec", "E_fus",
              "x seq", "x dec");
}

}  // namespace

std::string RunAgGemm(Context& ctx) {
  const ElemType type = ElemType::kBF16;
  const int w = 4, m_shard = 2048, k = 4096, m = w * m_shard;
  const std::vector<int> ns =
      ctx.quick ? std::vector<int>{2048} : std::vector<int>{1024, 2048, 4096, 8192};
  const std::vector<int> splits_list =
      ctx.quick ? std::vector<int>{1, 4} : std::vector<int>{1, 2, 4, 8, 16};
  const int n_max = *std::max_element(ns.begin(), ns.end());
  const int s_max = *std::max_element(splits_list.begin(), splits_list.end());
  const size_t shard_bytes = static_cast<size_t>(m_shard) * k * 2;
  DeviceBuffer a(static_cast<size_t>(m) * k * 2), b(static_cast<size_t>(k) * n_max * 2);
  DeviceBuffer c(static_cast<size_t>(m) * n_max * 4), c_ref(c.bytes());
  DeviceBuffer flags(static_cast<size_t>(w) * s_max * sizeof(uint32_t));
  PinnedBuffer remote(shard_bytes * (w - 1));
  FillHost<__nv_bfloat16>(remote.host<__nv_bfloat16>(), static_cast<size_t>(m - m_shard) * k, 31,
                          static_cast<size_t>(m_shard) * k);
  LaunchFill(type, a.get(), static_cast<size_t>(m_shard) * k, 31, 0, ctx.comp);
  LOOM_CUDA_OK(cudaMemsetAsync(flags.get(), 0, flags.bytes(), ctx.comp));
  char* a_remote_dev = static_cast<char*>(a.get()) + shard_bytes;  // rows [m_shard, m)
  const char* a_remote_host = remote.host<char>();
  uint32_t* flag = flags.as<uint32_t>();
  std::printf(
      "\n(b) AG+GEMM, W=%d, remote shards in pinned host memory, copy engine + stream-written "
      "flags (ms; E = overlap efficiency; x = speedup of fused)\n",
      w);
  PrintOverlapHeader();
  std::vector<std::string> rows;
  DualStreamTimer timer(ctx);
  for (int n : ns) {
    LaunchFill(type, b.get(), static_cast<size_t>(k) * n, 32, 0, ctx.comp);
    TileGemmArgs full;
    full.a = a.get();
    full.b = b.get();
    full.c = c.as<float>();
    full.m = m;
    full.n = n;
    full.k = k;
    full.error = ctx.error;
    // Reference: all shards resident, plain GEMM.
    LOOM_CUDA_OK(cudaMemcpyAsync(a_remote_dev, a_remote_host, shard_bytes * (w - 1),
                                 cudaMemcpyHostToDevice, ctx.comp));
    TileGemmArgs ref_args = full;
    ref_args.c = c_ref.as<float>();
    LaunchTileGemm(type, ref_args, ctx.comp);
    for (int splits : splits_list) {
      if (ctx.ShouldStop("AG+GEMM N=" + std::to_string(n) + " S=" + std::to_string(splits))) {
        return JsonArray(rows);
      }
      const int chunk_rows = m_shard / splits;
      const size_t chunk_bytes = static_cast<size_t>(chunk_rows) * k * 2;
      auto copy_chunks = [&](uint32_t epoch) {
        for (int sh = 1; sh < w; ++sh) {
          for (int j = 0; j < splits; ++j) {
            const size_t off = (static_cast<size_t>(sh - 1) * splits + j) * chunk_bytes;
            LOOM_CUDA_OK(cudaMemcpyAsync(a_remote_dev + off, a_remote_host + off, chunk_bytes,
                                         cudaMemcpyHostToDevice, ctx.copy));
            const auto addr = reinterpret_cast<uintptr_t>(flag + sh * splits + j);
            LOOM_CU_OK(cuStreamWriteValue32(reinterpret_cast<CUstream>(ctx.copy),
                                            static_cast<CUdeviceptr>(addr), epoch,
                                            CU_STREAM_WRITE_VALUE_DEFAULT));
          }
        }
      };
      auto comp_only = [&] {
        const uint32_t epoch = ctx.NextEpoch();
        LaunchSetFlags(flag, w * splits, epoch, ctx.comp);
        TileGemmArgs args = full;
        args.flags = flag;
        args.rows_per_flag = chunk_rows;
        args.epoch = epoch;
        timer.Begin();
        LaunchTileGemm(type, args, ctx.comp);
        return timer.End();
      };
      auto comm_only = [&] {
        const uint32_t epoch = ctx.NextEpoch();
        timer.Begin();
        copy_chunks(epoch);
        return timer.End();
      };
      auto sequential = [&] {
        timer.Begin();
        LOOM_CUDA_OK(cudaMemcpyAsync(a_remote_dev, a_remote_host, shard_bytes * (w - 1),
                                     cudaMemcpyHostToDevice, ctx.comp));
        LaunchTileGemm(type, full, ctx.comp);
        return timer.End();
      };
      std::vector<cudaEvent_t> shard_done(w);
      for (cudaEvent_t& e : shard_done)
        LOOM_CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      auto decomposed = [&] {
        timer.Begin();
        for (int sh = 1; sh < w; ++sh) {
          const size_t off = static_cast<size_t>(sh - 1) * shard_bytes;
          LOOM_CUDA_OK(cudaMemcpyAsync(a_remote_dev + off, a_remote_host + off, shard_bytes,
                                       cudaMemcpyHostToDevice, ctx.copy));
          LOOM_CUDA_OK(cudaEventRecord(shard_done[sh], ctx.copy));
        }
        for (int sh = 0; sh < w; ++sh) {
          if (sh > 0) LOOM_CUDA_OK(cudaStreamWaitEvent(ctx.comp, shard_done[sh], 0));
          TileGemmArgs part = full;
          part.a = static_cast<const char*>(full.a) + sh * shard_bytes;
          part.c = full.c + static_cast<size_t>(sh) * m_shard * n;
          part.m = m_shard;
          LaunchTileGemm(type, part, ctx.comp);
        }
        return timer.End();
      };
      auto fused = [&] {
        const uint32_t epoch = ctx.NextEpoch();
        TileGemmArgs args = full;
        args.flags = flag;
        args.rows_per_flag = chunk_rows;
        args.epoch = epoch;
        timer.Begin();
        LaunchSetFlags(flag, splits, epoch, ctx.comp);  // the local shard is there already
        LaunchTileGemm(type, args, ctx.comp);
        copy_chunks(epoch);
        return timer.End();
      };
      // Value check of each variant: remote rows poisoned (NaN) first, so a tile that read
      // before its chunk arrived cannot match the reference bitwise.
      bool ok = true;
      const std::pair<const char*, std::function<double()>> checked[] = {
          {"sequential", sequential}, {"decomposed", decomposed}, {"fused", fused}};
      for (const auto& [name, variant] : checked) {
        LOOM_CUDA_OK(cudaMemsetAsync(a_remote_dev, 0xFF, shard_bytes * (w - 1), ctx.comp));
        LOOM_CUDA_OK(cudaMemsetAsync(c.get(), 0xFF, c.bytes(), ctx.comp));
        variant();
        const bool timely = ctx.TakeError(std::string("AG+GEMM ") + name);
        const unsigned long long bad =
            CountMismatches(ctx, c.as<float>(), c_ref.as<float>(), 0, m, n);
        if (!timely || bad != 0) {
          ok = false;
          ctx.Fail("AG+GEMM " + std::string(name) + " N=" + std::to_string(n) +
                   " S=" + std::to_string(splits) + ": " + std::to_string(bad) + " outputs differ");
        }
      }
      if (ctx.wait_failed) {  // a lost signal: timing this point would only time timeouts
        for (cudaEvent_t e : shard_done) LOOM_CUDA_OK(cudaEventDestroy(e));
        return JsonArray(rows);
      }
      OverlapSamples samples;
      for (int r = 0; r < ctx.reps; ++r) {  // variants interleaved within each repetition
        samples.comp.push_back(comp_only());
        samples.comm.push_back(comm_only());
        samples.seq.push_back(sequential());
        samples.dec.push_back(decomposed());
        samples.fused.push_back(fused());
      }
      if (!ctx.TakeError("AG+GEMM timing runs")) ok = false;
      for (cudaEvent_t e : shard_done) LOOM_CUDA_OK(cudaEventDestroy(e));
      const double tc = Summarize(samples.comp).median, tm = Summarize(samples.comm).median;
      rows.push_back(ReportOverlap("ag_gemm", w, m, n, k, splits, samples,
                                   std::max(tc, tm + tc / w), std::max(tc, tm + tc / (w * splits)),
                                   ok));
    }
  }
  return JsonArray(rows);
}

std::string RunGemmRs(Context& ctx) {
  const ElemType type = ElemType::kBF16;
  const int w = 4, m_seg = 2048, m = w * m_seg, n = 4096;
  const std::vector<int> ks =
      ctx.quick ? std::vector<int>{4096} : std::vector<int>{2048, 4096, 8192};
  const int k_max = *std::max_element(ks.begin(), ks.end());
  const size_t seg_bytes = static_cast<size_t>(m_seg) * n * 4;
  DeviceBuffer a(static_cast<size_t>(m) * k_max * 2), b(static_cast<size_t>(k_max) * n * 2);
  DeviceBuffer c(static_cast<size_t>(m) * n * 4), c_ref(c.bytes());
  PinnedBuffer remote(c.bytes());  // same layout as c; rows of segments 1..W-1 used
  std::printf(
      "\n(c) GEMM+RS, W=%d, remote segments to pinned host memory; fused = epilogue stores "
      "to mapped memory (ms)\n",
      w);
  PrintOverlapHeader();
  std::vector<std::string> rows;
  DualStreamTimer timer(ctx);
  std::vector<cudaEvent_t> seg_done(w);
  for (cudaEvent_t& e : seg_done)
    LOOM_CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const int tiles_per_seg = m_seg / kTileM;
  for (int k : ks) {
    if (ctx.ShouldStop("GEMM+RS K=" + std::to_string(k))) break;
    LaunchFill(type, a.get(), static_cast<size_t>(m) * k, 41, 0, ctx.comp);
    LaunchFill(type, b.get(), static_cast<size_t>(k) * n, 42, 0, ctx.comp);
    TileGemmArgs full;
    full.a = a.get();
    full.b = b.get();
    full.c = c.as<float>();
    full.m = m;
    full.n = n;
    full.k = k;
    full.error = ctx.error;
    full.row_tile_rotation = tiles_per_seg;  // segment rank+1 first, own segment (0) last
    TileGemmArgs ref_args = full;
    ref_args.c = c_ref.as<float>();
    LaunchTileGemm(type, ref_args, ctx.comp);
    char* c_remote_dev = c.as<char>() + seg_bytes;
    char* c_remote_host = remote.host<char>() + seg_bytes;
    auto comp_only = [&] {
      timer.Begin();
      LaunchTileGemm(type, full, ctx.comp);
      return timer.End();
    };
    auto comm_only = [&] {
      timer.Begin();
      for (int sg = 1; sg < w; ++sg) {
        const size_t off = static_cast<size_t>(sg - 1) * seg_bytes;
        LOOM_CUDA_OK(cudaMemcpyAsync(c_remote_host + off, c_remote_dev + off, seg_bytes,
                                     cudaMemcpyDeviceToHost, ctx.copy));
      }
      return timer.End();
    };
    auto sequential = [&] {
      timer.Begin();
      LaunchTileGemm(type, full, ctx.comp);
      LOOM_CUDA_OK(cudaMemcpyAsync(c_remote_host, c_remote_dev, seg_bytes * (w - 1),
                                   cudaMemcpyDeviceToHost, ctx.comp));
      return timer.End();
    };
    auto decomposed = [&] {
      timer.Begin();
      for (int step = 1; step <= w; ++step) {
        const int sg = step % w;  // 1, 2, ..., W-1, then own segment 0
        TileGemmArgs part = full;
        part.a = static_cast<const char*>(full.a) + static_cast<size_t>(sg) * m_seg * k * 2;
        part.c = full.c + static_cast<size_t>(sg) * m_seg * n;
        part.m = m_seg;
        part.row_tile_rotation = 0;
        LaunchTileGemm(type, part, ctx.comp);
        if (sg == 0) continue;
        LOOM_CUDA_OK(cudaEventRecord(seg_done[sg], ctx.comp));
        LOOM_CUDA_OK(cudaStreamWaitEvent(ctx.copy, seg_done[sg], 0));
        const size_t off = static_cast<size_t>(sg - 1) * seg_bytes;
        LOOM_CUDA_OK(cudaMemcpyAsync(c_remote_host + off, c_remote_dev + off, seg_bytes,
                                     cudaMemcpyDeviceToHost, ctx.copy));
      }
      return timer.End();
    };
    auto fused = [&] {
      TileGemmArgs args = full;
      args.c_remote = remote.device<float>();
      args.own_row0 = 0;
      args.own_rows = m_seg;
      timer.Begin();
      LaunchTileGemm(type, args, ctx.comp);
      return timer.End();
    };
    bool ok = true;
    const std::pair<const char*, std::function<double()>> checked[] = {
        {"sequential", sequential}, {"decomposed", decomposed}, {"fused", fused}};
    for (const auto& [name, variant] : checked) {
      LOOM_CUDA_OK(cudaMemsetAsync(c.get(), 0xFF, c.bytes(), ctx.comp));
      LOOM_CUDA_OK(cudaStreamSynchronize(ctx.comp));
      std::fill(remote.host<float>(), remote.host<float>() + static_cast<size_t>(m) * n, NAN);
      variant();
      ctx.TakeError(std::string("GEMM+RS ") + name);
      const unsigned long long bad =
          CountMismatches(ctx, remote.device<float>(), c_ref.as<float>(), m_seg, m - m_seg, n) +
          CountMismatches(ctx, c.as<float>(), c_ref.as<float>(), 0, m_seg, n);
      if (bad != 0) {
        ok = false;
        ctx.Fail("GEMM+RS " + std::string(name) + " K=" + std::to_string(k) + ": " +
                 std::to_string(bad) + " outputs differ");
      }
    }
    OverlapSamples samples;
    for (int r = 0; r < ctx.reps; ++r) {
      samples.comp.push_back(comp_only());
      samples.comm.push_back(comm_only());
      samples.seq.push_back(sequential());
      samples.dec.push_back(decomposed());
      samples.fused.push_back(fused());
    }
    const double tc = Summarize(samples.comp).median, tm = Summarize(samples.comm).median;
    // §7: decomposed ~ t_c/W + max(t_c (W-1)/W, t_m); tile-pushed ~ max(t_c, t_c/(W S) + t_m)
    // with S = one tile row per "split" here (tiles_per_seg splits per segment).
    rows.push_back(ReportOverlap("gemm_rs", w, m, n, k, tiles_per_seg, samples,
                                 tc / w + std::max(tc * (w - 1) / w, tm),
                                 std::max(tc, tc / (w * tiles_per_seg) + tm), ok));
  }
  for (cudaEvent_t e : seg_done) LOOM_CUDA_OK(cudaEventDestroy(e));
  return JsonArray(rows);
}

}  // namespace loom::overlap::cuda
