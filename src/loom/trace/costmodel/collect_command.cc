#include "loom/trace/costmodel/collect_command.h"

#include <cstdio>

namespace loom::trace::costmodel {

void AddCollectFlags(CLI::App& app, CollectCommand* c) {
  CollectOptions& o = c->options;
  app.add_option("--n", o.num_samples, "measurements to collect")->default_val(o.num_samples);
  app.add_option("--out", c->out, "output dataset (JSONL)")->required();
  app.add_option("--seed", o.seed, "sampling seed")->default_val(o.seed);
  app.add_option("--time-budget-s", o.time_budget_s, "stop after this many seconds")
      ->default_val(o.time_budget_s);
  app.add_option("--devices", c->devices, "e.g. scalarx1 avx2x2 (default: all supported)");
  app.add_option("--devices-per-kernel", o.devices_per_kernel, "devices timed per instance")
      ->default_val(o.devices_per_kernel);
  app.add_option("--max-flops", o.max_flops, "resample shapes above this")
      ->default_val(o.max_flops);
}

int RunCollectCommand(CollectCommand c) {
  for (const std::string& name : c.devices) {
    Result<Device> d = DeviceFromName(name);
    if (!d.ok()) {
      std::fprintf(stderr, "%s\n", d.status().ToString().c_str());
      return 2;
    }
    c.options.devices.push_back(*d);
  }
  c.options.progress = [](int done, int total) {
    std::fprintf(stderr, "collected %d/%d\n", done, total);
  };
  Result<Dataset> ds = Collect(c.options);
  if (!ds.ok()) {
    std::fprintf(stderr, "%s\n", ds.status().ToString().c_str());
    return 1;
  }
  for (const DeviceInfo& d : ds->devices) {
    std::fprintf(stderr, "device %-10s peak %.1f GFLOP/s  stream-add %.1f GB/s\n",
                 d.device.Name().c_str(), d.peak_gflops, d.mem_gbps);
  }
  Status st = WriteDataset(*ds, c.out);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "wrote %zu samples to %s\n", ds->samples.size(), c.out.c_str());
  return 0;
}

}  // namespace loom::trace::costmodel
