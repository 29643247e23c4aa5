// LoadCooperative: every byte range needed by any rank is read once and exchanged.
//
//   1. Each rank plans its reads (PlanReads); the (file, offset, length) of all requests are
//      all-gathered, so every rank knows every rank's needs.
//   2. All ranks coalesce the union identically and cut it into pieces; each piece gets one
//      reader: among the ranks needing at least half as many of its bytes as the neediest, the
//      one with the fewest bytes assigned so far.
//   3. In rounds of about exchange_round_bytes per rank: readers read their pieces, copy what they
//      need themselves, and pack what others need in an order both sides derive from the shared
//      plan (piece order, then request order); one AllToAllV moves it; receivers scatter.
#include <xxhash.h>

#include <cstring>

#include "loom/base/clock.h"
#include "loom/base/huge_buffer.h"
#include "loom/base/stream_copy.h"
#include "loom/ckpt/loader.h"
#include "loom/ckpt/parallel.h"
#include "loom/ckpt/read_plan.h"
#include "loom/comm/communicator.h"

namespace loom::ckpt {
namespace {

// All ranks' requests; own requests keep their destinations.
Result<std::vector<ReadReq>> GatherRequests(const std::vector<ReadReq>& mine,
                                            comm::Communicator& comm) {
  const int world = comm.size(), rank = comm.rank();
  std::vector<int64_t> flat;
  for (const ReadReq& r : mine) {
    flat.insert(flat.end(), {static_cast<int64_t>(r.file), r.off, r.len});
  }
  int64_t n = static_cast<int64_t>(flat.size());
  std::vector<int64_t> counts(world);
  LOOM_RETURN_IF_ERROR(comm.AllGather(TensorView::Of(&n, 1), TensorView::Of(counts.data(), world))
                           .WithContext("cooperative load: request counts"));
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  std::vector<int64_t> all(static_cast<size_t>(total));
  LOOM_RETURN_IF_ERROR(comm.AllGatherV(TensorView::Of(flat.data(), n),
                                       TensorView::Of(all.data(), total), counts)
                           .WithContext("cooperative load: requests"));
  std::vector<ReadReq> out;
  int64_t at = 0;
  for (int r = 0; r < world; ++r) {
    for (int64_t i = 0; i < counts[r]; i += 3, at += 3) {
      if (r == rank) {
        out.push_back(mine[i / 3]);
      } else {
        ReadReq q;
        q.file = static_cast<int>(all[at]);
        q.off = all[at + 1];
        q.len = all[at + 2];
        out.push_back(q);
      }
      out.back().rank = r;
    }
  }
  return out;
}

// Picks one reader per piece (deterministic: every rank computes the same answer).
std::vector<int> AssignReaders(const std::vector<ReadPiece>& pieces, int world) {
  std::vector<int> reader(pieces.size());
  std::vector<int64_t> load(world, 0);
  std::vector<int64_t> need(world);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const ReadPiece& p = pieces[i];
    std::fill(need.begin(), need.end(), 0);
    for (const ReadReq* r : p.span->reqs) {
      auto [a, e] = Overlap(*r, p.off, p.end);
      if (a < e) need[r->rank] += e - a;
    }
    const int64_t most = *std::max_element(need.begin(), need.end());
    int best = -1;
    if (most == 0) {  // a coalesced gap nobody needs (piece_bytes < coalesce_gap)
      reader[i] = -1;
      continue;
    }
    for (int r = 0; r < world; ++r) {
      if (need[r] * 2 >= most && need[r] > 0 && (best < 0 || load[r] < load[best])) best = r;
    }
    reader[i] = best;
    load[best] += p.end - p.off;
  }
  return reader;
}

}  // namespace

Result<LoadReport> LoadCooperative(Storage& storage, const CheckpointSource& src,
                                   const StateDict& targets, comm::Communicator& comm,
                                   const LoadOptions& opts) {
  Stopwatch sw;
  const int world = comm.size(), rank = comm.rank();
  LoadReport report;
  report.step = src.meta.step;
  std::vector<ReadReq> mine;
  // A planning error on one rank must not leave the others waiting in the exchange.
  Status planned = PlanReads(src, targets, &mine, &report.bytes_needed);
  int64_t failed = planned.ok() ? 0 : 1;
  LOOM_RETURN_IF_ERROR(comm.AllReduce(TensorView::Of(&failed, 1), comm::ReduceOp::kMax));
  LOOM_RETURN_IF_ERROR(planned);
  if (failed) return AbortedError("cooperative load: another rank failed to plan its reads");
  LOOM_ASSIGN_OR_RETURN(std::vector<ReadReq> all, GatherRequests(mine, comm));

  std::vector<const ReadReq*> ptrs;
  for (const ReadReq& r : all) ptrs.push_back(&r);
  const std::vector<ReadSpan> spans = Coalesce(ptrs, opts.coalesce_gap, opts.max_span);
  const std::vector<ReadPiece> pieces = CutPieces(spans, opts.piece_bytes);
  const std::vector<int> reader = AssignReaders(pieces, world);

  std::vector<ReadSpan> my_spans;  // only to open the files this rank reads
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (reader[i] == rank) my_spans.push_back({pieces[i].span->file, 0, 0, {}});
  }
  auto opened = OpenFiles(storage, src, my_spans, opts);
  int64_t open_failed = opened.ok() ? 0 : 1;
  LOOM_RETURN_IF_ERROR(comm.AllReduce(TensorView::Of(&open_failed, 1), comm::ReduceOp::kMax));
  LOOM_RETURN_IF_ERROR(opened.status());
  if (open_failed) return AbortedError("cooperative load: another rank could not open its files");
  auto files = *std::move(opened);
  ThreadPool pool({.num_threads = std::max(1, opts.io_threads), .name = "ckpt-load"});
  pool.Start();

  size_t next = 0;
  Status status;
  while (next < pieces.size()) {
    // One round: pieces until about exchange_round_bytes per rank.
    size_t end = next;
    int64_t bytes = 0;
    while (end < pieces.size() && (end == next || bytes < opts.exchange_round_bytes * world)) {
      bytes += pieces[end].end - pieces[end].off;
      ++end;
    }
    std::vector<size_t> my_pieces;
    for (size_t i = next; i < end; ++i) {
      if (reader[i] == rank) my_pieces.push_back(i);
    }
    std::vector<HugeBuffer> data(my_pieces.size());  // aligned: direct reads, no bounce
    Status read = ParallelFor(&pool, static_cast<int64_t>(my_pieces.size()), [&](int64_t k) {
      const ReadPiece& p = pieces[my_pieces[k]];
      data[k] = HugeBuffer(static_cast<size_t>(p.end - p.off), /*prefault=*/false);
      LOOM_RETURN_IF_ERROR(files.at(p.span->file)->ReadAt(p.off, p.end - p.off, data[k].data()));
      for (const ReadReq* r : p.span->reqs) {  // this rank's own needs
        auto [a, e] = Overlap(*r, p.off, p.end);
        if (r->rank == rank && a < e) {
          StreamingCopy(r->dst + (a - r->off), data[k].data() + (a - p.off), e - a);
        }
      }
      return OkStatus();
    });
    // Agree on failure before exchanging, so no rank waits for data that will not come.
    int64_t bad = read.ok() ? 0 : 1;
    LOOM_RETURN_IF_ERROR(comm.AllReduce(TensorView::Of(&bad, 1), comm::ReduceOp::kMax));
    LOOM_RETURN_IF_ERROR(read);
    if (bad) return AbortedError("cooperative load: another rank failed to read its share");

    // Pack by destination rank, in (piece, request) order.
    std::vector<int64_t> send_counts(world, 0), recv_counts(world, 0);
    for (size_t i = next; i < end; ++i) {
      const ReadPiece& p = pieces[i];
      for (const ReadReq* r : p.span->reqs) {
        auto [a, e] = Overlap(*r, p.off, p.end);
        if (a >= e || r->rank == reader[i]) continue;
        if (reader[i] == rank) send_counts[r->rank] += e - a;
        if (r->rank == rank) recv_counts[reader[i]] += e - a;
      }
    }
    std::vector<int64_t> send_at(world, 0), recv_at(world, 0);
    for (int r = 1; r < world; ++r) {
      send_at[r] = send_at[r - 1] + send_counts[r - 1];
      recv_at[r] = recv_at[r - 1] + recv_counts[r - 1];
    }
    std::vector<char> send(static_cast<size_t>(send_at[world - 1] + send_counts[world - 1]));
    std::vector<char> recv(static_cast<size_t>(recv_at[world - 1] + recv_counts[world - 1]));
    for (size_t k = 0; k < my_pieces.size(); ++k) {
      const ReadPiece& p = pieces[my_pieces[k]];
      for (const ReadReq* r : p.span->reqs) {
        auto [a, e] = Overlap(*r, p.off, p.end);
        if (a >= e || r->rank == rank) continue;
        std::memcpy(send.data() + send_at[r->rank], data[k].data() + (a - p.off), e - a);
        send_at[r->rank] += e - a;
      }
    }
    data.clear();
    std::vector<int64_t> sc = send_counts, rc = recv_counts;
    LOOM_RETURN_IF_ERROR(comm.AllToAllV(TensorView(send.data(), DType::kU8,
                                                   {static_cast<int64_t>(send.size())}),
                                        sc,
                                        TensorView(recv.data(), DType::kU8,
                                                   {static_cast<int64_t>(recv.size())}),
                                        rc)
                             .WithContext("cooperative load: exchange"));
    for (size_t i = next; i < end; ++i) {
      const ReadPiece& p = pieces[i];
      if (reader[i] == rank) continue;
      for (const ReadReq* r : p.span->reqs) {
        auto [a, e] = Overlap(*r, p.off, p.end);
        if (a >= e || r->rank != rank) continue;
        StreamingCopy(r->dst + (a - r->off), recv.data() + recv_at[reader[i]], e - a);
        recv_at[reader[i]] += e - a;
      }
    }
    for (int r = 0; r < world; ++r) {
      report.bytes_sent += send_counts[r];
      report.bytes_received += recv_counts[r];
    }
    next = end;
  }
  report.reads = static_cast<int64_t>(pieces.size());
  Status verified;
  if (opts.verify) {
    auto n = VerifyWholeChunks(&pool, src, mine);
    if (n.ok()) report.verified_chunks = *n;
    verified = n.status();
  }
  pool.Stop();
  for (const auto& [i, f] : files) report.bytes_read += f->bytes_read();
  int64_t totals[3] = {report.bytes_read, report.bytes_needed, verified.ok() ? 0 : 1};
  LOOM_RETURN_IF_ERROR(comm.AllReduce(TensorView::Of(totals, 3), comm::ReduceOp::kSum));
  LOOM_RETURN_IF_ERROR(verified);
  if (totals[2] > 0) return DataLossError("cooperative load: another rank found a bad checksum");
  report.total_bytes_read = totals[0];
  report.total_bytes_needed = totals[1];
  report.seconds = sw.Seconds();
  return report;
}

}  // namespace loom::ckpt
