// The predictor's dataset: measured kernel latencies with their AST features and device vectors.
//
// On disk (JSON Lines, units explicit): line 1 is a header
//   {"format":"loom.costmodel.dataset","version":1,"latency_unit":"s",
//    "leaf_features":[names...], "device_features":[names...],
//    "devices":[{"name":"avx2x1","isa":"avx2","threads":1,"peak_gflops":..,"mem_gbps":..,
//                "l1d_bytes":..,"l2_bytes":..,"l3_bytes":..,"vector":[...]}, ...],
//    "note":"devices are ISA/thread variants of one host sharing one memory hierarchy"}
// then one sample per line
//   {"id":..,"spec":{kernel spec},"shape_key":..,"instance_key":..,"group":..,"device":"avx2x1",
//    "latency_s":..,"runs":..,"cv":..,"iqr_rel":..,"flops":..,"bytes":..,"num_nodes":..,
//    "leaf_pos":[pre-order index per leaf],"leaves":[[kNumLeafFeatures floats] per leaf]}.
// A sequence model (e.g. a libtorch transformer) reads `leaves` as an [N_leaf x F] tensor, pads
// to a max length, adds PositionalEncoding(leaf_pos[i], F) after normalising, and takes the
// device vector from the header; pooled-feature baselines use PoolLeaves(leaves).
//
// Thread-safety: value types; Read/Write touch only their own file.
#pragma once

#include <string>
#include <vector>

#include "loom/base/status.h"
#include "loom/trace/costmodel/features.h"
#include "loom/trace/costmodel/kernel_spec.h"

namespace loom::trace::costmodel {

struct Sample {
  int64_t id = 0;
  KernelSpec spec;
  std::string shape_key, instance_key;  // from spec (cached)
  std::string device;                   // Device::Name()
  double latency_s = 0;                 // median over `runs`
  int runs = 0;
  double cv = 0;                // coefficient of variation of the timed runs
  double iqr_rel = 0;           // (p75 - p25) / median of the timed runs
  double flops = 0, bytes = 0;  // spec.Flops(), spec.CompulsoryBytes()
  int num_nodes = 0;            // pre-order tree size
  std::vector<int> leaf_pos;
  std::vector<std::vector<float>> leaves;
};

struct Dataset {
  std::vector<DeviceInfo> devices;
  std::vector<Sample> samples;

  // The device of a sample (nullptr if the name is not in `devices`).
  const DeviceInfo* FindDevice(const std::string& name) const;
};

Status WriteDataset(const Dataset& ds, const std::string& path);
// Fails with kDataLoss naming the file and line on a malformed line, a missing header, an
// unknown device, or a leaf vector whose length is not kNumLeafFeatures.
Result<Dataset> ReadDataset(const std::string& path);

}  // namespace loom::trace::costmodel
