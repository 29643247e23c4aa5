#include "loom/trace/dfg/model_spec.h"

#include <cmath>

namespace loom::trace::dfg {
namespace {

std::string RankPrefix(int r) { return "rank" + std::to_string(r) + "->"; }

bool Finite(double v) { return std::isfinite(v) && v >= 0; }

// Per-rank node ids of one bucket's collective.
struct BucketNodes {
  int sync = -1;
  int compress = -1;
  std::vector<int> send, recv;
  int decompress = -1;
  int Last() const {
    if (decompress >= 0) return decompress;
    if (!recv.empty()) return recv.back();
    return compress >= 0 ? compress : sync;
  }
};

// Per bucket: Sync, [COMPRESS], the ring's SEND/RECV, [DECOMPRESS] on every rank's comm device.
void AddBucketCollectives(const ModelSpec& spec, const std::vector<int>& comm,
                          const std::vector<int>& link, const std::vector<std::vector<int>>& bw,
                          const std::vector<int>& bw_end, const std::vector<int>& update,
                          Graph* gp) {
  Graph& g = *gp;
  const int N = spec.world_size;
  const int B = spec.num_buckets();
  const int steps = spec.RingSteps();
  std::vector<std::vector<BucketNodes>> nodes(B, std::vector<BucketNodes>(N));
  for (int b = 0; b < B; ++b) {
    const int64_t bytes = spec.BucketBytes(b);
    const CodecModel codec = spec.bucket_codec.empty() ? CodecModel{} : spec.bucket_codec[b];
    const double wire = static_cast<double>(bytes) * codec.ratio;
    const int64_t chunk = static_cast<int64_t>(std::ceil(wire / N));
    const int64_t segs =
        spec.segment_bytes > 0
            ? std::max<int64_t>(1, (chunk + spec.segment_bytes - 1) / spec.segment_bytes)
            : 1;
    const double elems = static_cast<double>(bytes) / 4.0;
    const int last_grad =
        (b + 1 < B ? spec.bucket_begin[b + 1] : static_cast<int>(spec.grads.size())) - 1;
    const std::string comm_name = "Comm.b" + std::to_string(b);
    for (int r = 0; r < N; ++r) {
      BucketNodes& bn = nodes[b][r];
      const std::string pre = RankPrefix(r) + comm_name;
      bn.sync = g.AddNode({.name = pre + ".Sync",
                           .kind = NodeKind::kSync,
                           .rank = r,
                           .device = comm[r],
                           .dur_ns = spec.ranks[r].BucketSync(b, spec.sync_ns),
                           .bytes = bytes,
                           .bucket = b});
      g.AddEdge(spec.overlap ? bw[r][last_grad] : bw_end[r], bn.sync, spec.bw_to_sync_gap_ns);
      if (spec.serial_collectives && b > 0) {
        g.AddEdge(nodes[b - 1][r].Last(), bn.sync,
                  RankModel::At(spec.ranks[r].bucket_finish_ns, b - 1));
      }
      if (codec.enabled()) {
        bn.compress = g.AddNode({.name = pre + ".COMPRESS",
                                 .kind = NodeKind::kCompress,
                                 .rank = r,
                                 .device = comm[r],
                                 .dur_ns = codec.encode_a_ns + codec.encode_ns_per_elem * elems,
                                 .bytes = bytes,
                                 .bucket = b});
        g.AddEdge(bn.sync, bn.compress, 0);
      }
      for (int s = 0; s < steps; ++s) {
        bn.send.push_back(
            g.AddNode({.name = pre + ".SEND~>" + std::to_string(s),
                       .kind = NodeKind::kSend,
                       .rank = r,
                       .device = comm[r],
                       .dur_ns = static_cast<double>(segs - 1) * g.links()[link[r]].alpha_ns,
                       .link = link[r],
                       .bytes = chunk,
                       .bucket = b,
                       .ring_step = s}));
        bn.recv.push_back(g.AddNode({.name = pre + ".RECV~>" + std::to_string(s),
                                     .kind = NodeKind::kRecv,
                                     .rank = r,
                                     .device = comm[r],
                                     .dur_ns = spec.recv_ns + spec.recv_ns_per_byte * chunk,
                                     .bytes = chunk,
                                     .bucket = b,
                                     .ring_step = s}));
        if (s > 0) g.AddEdge(bn.recv[s - 1], bn.send[s], spec.step_gap_ns);
      }
      if (codec.enabled()) {
        bn.decompress = g.AddNode({.name = pre + ".DECOMPRESS",
                                   .kind = NodeKind::kDecompress,
                                   .rank = r,
                                   .device = comm[r],
                                   .dur_ns = codec.decode_a_ns + codec.decode_ns_per_elem * elems,
                                   .bytes = bytes,
                                   .bucket = b});
        if (!bn.recv.empty())
          g.AddEdge(bn.recv.back(), bn.decompress, 0);
        else
          g.AddEdge(bn.compress, bn.decompress, 0);
      }
      g.AddEdge(bn.Last(), update[r],
                spec.comm_to_update_gap_ns + RankModel::At(spec.ranks[r].bucket_finish_ns, b));
    }
    for (int r = 0; r < N; ++r) {
      BucketNodes& bn = nodes[b][r];
      for (int s = 0; s < steps; ++s) {
        g.AddEdge(bn.send[s], nodes[b][(r + 1) % N].recv[s], 0);
      }
      if (steps > 0) {
        for (int q = 0; q < N; ++q) {
          const BucketNodes& other = nodes[b][q];
          g.AddEdge(other.compress >= 0 ? other.compress : other.sync, bn.send[0], 0);
        }
      }
    }
  }
}

// UPDATE -> update collectives (rings on the compute devices) -> STEP_END.
void AddUpdateCollectives(const ModelSpec& spec, const std::vector<int>& compute,
                          const std::vector<int>& link, const std::vector<int>& update,
                          const std::vector<int>& step_end, Graph* g) {
  const int N = spec.world_size;
  std::vector<int> tail_from = update;
  std::vector<double> tail_gap(N, 0);  // finish time of the previous update collective
  for (size_t u = 0; u < spec.update_collectives.size(); ++u) {
    const UpdateCollective& uc = spec.update_collectives[u];
    const int steps = RingStepsFor(uc.kind, N);
    const int64_t chunk = (uc.bytes + N - 1) / N;
    std::vector<int> sync(N);
    std::vector<std::vector<int>> send(N), recv(N);
    for (int r = 0; r < N; ++r) {
      const std::string pre = RankPrefix(r) + "Update.c" + std::to_string(u);
      sync[r] = g->AddNode({.name = pre + ".Sync",
                            .kind = NodeKind::kSync,
                            .rank = r,
                            .device = compute[r],
                            .dur_ns = spec.ranks[r].UpdateSync(static_cast<int>(u), spec.sync_ns),
                            .bytes = uc.bytes});
      g->AddEdge(tail_from[r], sync[r], tail_gap[r]);
      for (int s = 0; s < steps; ++s) {
        send[r].push_back(g->AddNode({.name = pre + ".SEND~>" + std::to_string(s),
                                      .kind = NodeKind::kSend,
                                      .rank = r,
                                      .device = compute[r],
                                      .link = link[r],
                                      .bytes = chunk,
                                      .ring_step = s}));
        recv[r].push_back(g->AddNode({.name = pre + ".RECV~>" + std::to_string(s),
                                      .kind = NodeKind::kRecv,
                                      .rank = r,
                                      .device = compute[r],
                                      .dur_ns = spec.recv_ns + spec.recv_ns_per_byte * chunk,
                                      .bytes = chunk,
                                      .ring_step = s}));
        if (s > 0) g->AddEdge(recv[r][s - 1], send[r][s], spec.step_gap_ns);
      }
    }
    for (int r = 0; r < N; ++r) {
      for (int s = 0; s < steps; ++s) g->AddEdge(send[r][s], recv[(r + 1) % N][s], 0);
      if (steps > 0) {
        for (int q = 0; q < N; ++q) g->AddEdge(sync[q], send[r][0], 0);
      }
      tail_from[r] = steps > 0 ? recv[r].back() : sync[r];
      tail_gap[r] = RankModel::At(spec.ranks[r].update_finish_ns, u);
    }
  }
  for (int r = 0; r < N; ++r) {
    g->AddEdge(tail_from[r], step_end[r], spec.ranks[r].tail_ns + tail_gap[r]);
  }
}

}  // namespace

std::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "allreduce";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllGather:
      return "allgather";
  }
  return "?";
}

int64_t ModelSpec::BucketBytes(int b) const {
  const int end = b + 1 < num_buckets() ? bucket_begin[b + 1] : static_cast<int>(grads.size());
  int64_t sum = 0;
  for (int i = bucket_begin[b]; i < end; ++i) sum += grads[i].bytes;
  return sum;
}

int64_t ModelSpec::TotalGradBytes() const {
  int64_t sum = 0;
  for (const GradientPiece& g : grads) sum += g.bytes;
  return sum;
}

int RingStepsFor(CollectiveKind kind, int world) {
  if (world <= 1) return 0;
  return kind == CollectiveKind::kAllReduce ? 2 * (world - 1) : world - 1;
}

int ModelSpec::RingSteps() const { return RingStepsFor(collective, world_size); }

Status ModelSpec::Validate() const {
  if (world_size < 1) return InvalidArgumentError("model: world_size must be >= 1");
  if (static_cast<int>(ranks.size()) != world_size) {
    return InvalidArgumentError("model: " + std::to_string(ranks.size()) +
                                " rank models for world_size " + std::to_string(world_size));
  }
  if (grads.empty()) return InvalidArgumentError("model: no gradients");
  if (bucket_begin.empty() || bucket_begin[0] != 0) {
    return InvalidArgumentError("model: bucket_begin must start with 0");
  }
  for (size_t b = 1; b < bucket_begin.size(); ++b) {
    if (bucket_begin[b] <= bucket_begin[b - 1] ||
        bucket_begin[b] >= static_cast<int>(grads.size())) {
      return InvalidArgumentError("model: bucket " + std::to_string(b) +
                                  " boundaries are not increasing within the gradients");
    }
  }
  for (const UpdateCollective& u : update_collectives) {
    if (u.bytes < 0) return InvalidArgumentError("model: update collective with negative bytes");
  }
  if (!bucket_codec.empty() && static_cast<int>(bucket_codec.size()) != num_buckets()) {
    return InvalidArgumentError("model: bucket_codec has " + std::to_string(bucket_codec.size()) +
                                " entries for " + std::to_string(num_buckets()) + " buckets");
  }
  for (const CodecModel& c : bucket_codec) {
    if (!(c.ratio > 0) || !Finite(c.encode_a_ns) || !Finite(c.encode_ns_per_elem) ||
        !Finite(c.decode_a_ns) || !Finite(c.decode_ns_per_elem)) {
      return InvalidArgumentError("model: codec '" + c.name + "' has a bad ratio or cost");
    }
  }
  for (int r = 0; r < world_size; ++r) {
    const RankModel& m = ranks[r];
    if (m.bw_ns.size() != grads.size()) {
      return InvalidArgumentError("model: rank " + std::to_string(r) + " has " +
                                  std::to_string(m.bw_ns.size()) + " backward pieces for " +
                                  std::to_string(grads.size()) + " gradients");
    }
    bool ok = Finite(m.head_ns) && Finite(m.bw_gap_ns) && Finite(m.bw_tail_ns) &&
              Finite(m.pre_to_bw_gap_ns) && Finite(m.update_ns) && Finite(m.tail_ns) &&
              Finite(m.bw_to_update_gap_ns) && Finite(m.compute_ratio);
    for (double d : m.bw_ns) ok = ok && Finite(d);
    for (const ComputeOp& op : m.pre) ok = ok && Finite(op.dur_ns) && Finite(op.gap_after_ns);
    for (double d : m.bucket_sync_ns) ok = ok && Finite(d);
    for (double d : m.update_sync_ns) ok = ok && Finite(d);
    for (double d : m.bucket_finish_ns) ok = ok && Finite(d);
    for (double d : m.update_finish_ns) ok = ok && Finite(d);
    if (!ok) {
      return InvalidArgumentError("model: rank " + std::to_string(r) +
                                  " has a negative or non-finite duration");
    }
  }
  if (!Finite(alpha_ns) || !Finite(ns_per_byte) || !Finite(burst_bytes) ||
      !Finite(line_ns_per_byte) || !Finite(sync_ns) || !Finite(bw_to_sync_gap_ns) ||
      !Finite(step_gap_ns) || !Finite(recv_ns) || !Finite(recv_ns_per_byte) ||
      !Finite(comm_to_update_gap_ns) || segment_bytes < 0) {
    return InvalidArgumentError("model: a link or comm cost is negative or not finite");
  }
  if (!(kappa >= 1.0) || !std::isfinite(kappa)) {
    return InvalidArgumentError("model: kappa must be a finite value >= 1");
  }
  return OkStatus();
}

Result<Graph> BuildGraph(const ModelSpec& spec) {
  LOOM_RETURN_IF_ERROR(spec.Validate());
  const int N = spec.world_size;
  Graph g;
  std::vector<int> compute(N), comm(N), link(N);
  for (int r = 0; r < N; ++r) {
    compute[r] = g.AddDevice("rank" + std::to_string(r) + ".compute", DeviceKind::kSerial, r);
    comm[r] = g.AddDevice("rank" + std::to_string(r) + ".comm", DeviceKind::kSerial, r, true);
    g.set_kappa(r, spec.kappa);
  }
  if (spec.topology == LinkTopology::kShared) {
    const int l = g.AddLink({"shared", spec.alpha_ns, spec.ns_per_byte, true});
    for (int r = 0; r < N; ++r) link[r] = l;
  } else {
    for (int r = 0; r < N; ++r) {
      const RankModel& m = spec.ranks[r];
      link[r] = g.AddLink(
          {"rank" + std::to_string(r) + ".egress",
           m.egress_alpha_ns >= 0 ? m.egress_alpha_ns : spec.alpha_ns,
           m.egress_ns_per_byte >= 0 ? m.egress_ns_per_byte : spec.ns_per_byte, false,
           m.egress_burst_bytes >= 0 ? m.egress_burst_bytes : spec.burst_bytes,
           m.egress_line_ns_per_byte >= 0 ? m.egress_line_ns_per_byte : spec.line_ns_per_byte});
    }
  }
  // Compute chains; bw[r][i] = node of gradient piece i on rank r.
  std::vector<std::vector<int>> bw(N);
  std::vector<int> update(N), bw_end(N), step_end(N);
  for (int r = 0; r < N; ++r) {
    const RankModel& m = spec.ranks[r];
    const std::string pre = RankPrefix(r);
    int prev = -1;
    double prev_gap = 0;
    for (const ComputeOp& op : m.pre) {
      const int v = g.AddNode({.name = pre + std::string(NodeKindName(op.kind)) + "." + op.name,
                               .kind = op.kind,
                               .rank = r,
                               .device = compute[r],
                               .dur_ns = op.dur_ns,
                               .ratio = m.compute_ratio,
                               .release_ns = prev < 0 ? m.head_ns : 0});
      if (prev >= 0) g.AddEdge(prev, v, prev_gap);
      prev = v;
      prev_gap = op.gap_after_ns;
    }
    prev_gap = prev >= 0 ? m.pre_to_bw_gap_ns : 0;
    for (size_t i = 0; i < spec.grads.size(); ++i) {
      const int v = g.AddNode({.name = pre + "BW." + spec.grads[i].name,
                               .kind = NodeKind::kBackward,
                               .rank = r,
                               .device = compute[r],
                               .dur_ns = m.bw_ns[i],
                               .bytes = spec.grads[i].bytes,
                               .ratio = m.compute_ratio,
                               .release_ns = prev < 0 ? m.head_ns : 0});
      if (prev >= 0) g.AddEdge(prev, v, prev_gap);
      prev = v;
      prev_gap = m.bw_gap_ns;
      bw[r].push_back(v);
    }
    int last_bw = bw[r].back();
    if (m.bw_tail_ns > 0) {
      last_bw = g.AddNode({.name = pre + "BW.tail",
                           .kind = NodeKind::kBackward,
                           .rank = r,
                           .device = compute[r],
                           .dur_ns = m.bw_tail_ns,
                           .ratio = m.compute_ratio});
      g.AddEdge(bw[r].back(), last_bw, m.bw_gap_ns);
    }
    bw_end[r] = last_bw;
    update[r] = g.AddNode({.name = pre + "UPDATE",
                           .kind = NodeKind::kUpdate,
                           .rank = r,
                           .device = compute[r],
                           .dur_ns = m.update_ns,
                           .ratio = m.compute_ratio});
    g.AddEdge(last_bw, update[r], m.bw_to_update_gap_ns);
    step_end[r] = g.AddNode({.name = pre + "STEP_END", .kind = NodeKind::kOther, .rank = r});
  }
  AddBucketCollectives(spec, comm, link, bw, bw_end, update, &g);
  AddUpdateCollectives(spec, compute, link, update, step_end, &g);
  LOOM_RETURN_IF_ERROR(g.Finalize());
  return g;
}

std::vector<int> BucketsByBytes(const std::vector<GradientPiece>& grads, int64_t max_bytes) {
  std::vector<int> begin{0};
  int64_t cur = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (max_bytes > 0 && cur > 0 && cur + grads[i].bytes > max_bytes) {
      begin.push_back(static_cast<int>(i));
      cur = 0;
    }
    cur += grads[i].bytes;
  }
  return begin;
}

ModelSpec SyntheticSpec(int world, const std::vector<double>& fw_ns,
                        const std::vector<double>& bw_ns, const std::vector<int64_t>& grad_bytes,
                        double update_ns, int64_t bucket_bytes) {
  ModelSpec s;
  s.world_size = world;
  RankModel m;
  for (size_t i = 0; i < fw_ns.size(); ++i) {
    m.pre.push_back({"fw" + std::to_string(i), NodeKind::kForward, fw_ns[i], 0});
  }
  m.bw_ns = bw_ns;
  m.update_ns = update_ns;
  s.ranks.assign(world, m);
  for (size_t i = 0; i < grad_bytes.size(); ++i) {
    s.grads.push_back({"g" + std::to_string(i), grad_bytes[i]});
  }
  s.bucket_begin = BucketsByBytes(s.grads, bucket_bytes);
  return s;
}

}  // namespace loom::trace::dfg
