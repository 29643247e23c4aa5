// `loom bench ckpt`: loom's checkpointing against PyTorch 1.13's distributed checkpoint,
// torch.save per rank and gather-to-rank-0 (bench/ckpt_peer.py), with the machine's limits
// (memcpy, O_DIRECT write/read) measured in the same run. The orchestrator (cmd_bench_ckpt.cc)
// runs, per repetition and workload, one loom worker (bench_ckpt_worker.cc, as ranks) and the
// peers, interleaved, then prints medians, ratios and the targets.
#pragma once

#include <cstdint>
#include <string>

namespace loom::cli {

struct BenchCkptWorkerArgs {
  std::string dir;        // scratch directory for this worker's files
  std::string workload;   // dense | flat
  int64_t total_mib = 1024;
  int64_t hidden = 1024;
  int rep = 0;            // rep 0 also checks every load bit for bit
  std::string out;        // rank 0 writes its JSON result here
};

// Runs as one rank under the launcher; returns the exit code.
int RunBenchCkptWorker(const BenchCkptWorkerArgs& a);

}  // namespace loom::cli
