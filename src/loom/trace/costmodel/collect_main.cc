// loom_costmodel_collect: times N sampled kernel instances on this host's ISA/thread "devices"
// and writes the dataset (JSON Lines, see dataset.h). Same flags as `loom trace costmodel
// collect` (collect_command.h); this binary needs no torch.
//   loom_costmodel_collect --n 2000 --out ds.jsonl --seed 1 --time-budget-s 120
#include "loom/trace/costmodel/collect_command.h"

int main(int argc, char** argv) {
  using namespace loom::trace::costmodel;
  CollectCommand command;
  CLI::App app{
      "Collect a CDMPP-style kernel latency dataset (devices = ISA x threads of this "
      "host, sharing one memory hierarchy)"};
  AddCollectFlags(app, &command);
  CLI11_PARSE(app, argc, argv);
  return RunCollectCommand(command);
}
