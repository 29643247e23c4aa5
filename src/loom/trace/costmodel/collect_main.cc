// loom_costmodel_collect: times N sampled kernel instances on this host's ISA/thread "devices"
// and writes the dataset (JSON Lines, see dataset.h).
//   loom_costmodel_collect --n 2000 --out ds.jsonl --seed 1 --time-budget-s 120
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "loom/trace/costmodel/collect.h"

int main(int argc, char** argv) {
  using namespace loom::trace::costmodel;
  CollectOptions o;
  std::string out;
  std::vector<std::string> devices;
  CLI::App app{
      "Collect a CDMPP-style kernel latency dataset (devices = ISA x threads of this "
      "host, sharing one memory hierarchy)"};
  app.add_option("--n", o.num_samples, "measurements to collect")->default_val(o.num_samples);
  app.add_option("--out", out, "output dataset (JSONL)")->required();
  app.add_option("--seed", o.seed, "sampling seed")->default_val(o.seed);
  app.add_option("--time-budget-s", o.time_budget_s, "stop after this many seconds")
      ->default_val(o.time_budget_s);
  app.add_option("--devices", devices, "e.g. scalarx1 avx2x2 (default: all supported)");
  app.add_option("--devices-per-kernel", o.devices_per_kernel, "devices timed per instance")
      ->default_val(o.devices_per_kernel);
  app.add_option("--max-flops", o.max_flops, "resample shapes above this")
      ->default_val(o.max_flops);
  CLI11_PARSE(app, argc, argv);
  for (const std::string& name : devices) {
    loom::Result<Device> d = DeviceFromName(name);
    if (!d.ok()) {
      std::fprintf(stderr, "%s\n", d.status().ToString().c_str());
      return 2;
    }
    o.devices.push_back(*d);
  }
  o.progress = [](int done, int total) { std::fprintf(stderr, "collected %d/%d\n", done, total); };
  loom::Result<Dataset> ds = Collect(o);
  if (!ds.ok()) {
    std::fprintf(stderr, "%s\n", ds.status().ToString().c_str());
    return 1;
  }
  for (const DeviceInfo& d : ds->devices) {
    std::fprintf(stderr, "device %-10s peak %.1f GFLOP/s  stream-add %.1f GB/s\n",
                 d.device.Name().c_str(), d.peak_gflops, d.mem_gbps);
  }
  loom::Status st = WriteDataset(*ds, out);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "wrote %zu samples to %s\n", ds->samples.size(), out.c_str());
  return 0;
}
