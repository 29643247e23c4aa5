// `loom ckpt inspect|verify|export|import|diff|report`: tools for checkpoints (src/loom/ckpt).
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "loom/ckpt/loader.h"
#include "loom/ckpt/safetensors.h"
#include "loom/ckpt/tools.h"
#include "loom/cli/commands.h"
#include "loom/cli/parse_bytes.h"

namespace loom::cli {
namespace {

int Fail(const char* what, const Status& s) {
  std::fprintf(stderr, "loom ckpt %s: %s\n", what, s.ToString().c_str());
  const StatusCode c = s.code();
  return c == StatusCode::kInvalidArgument || c == StatusCode::kNotFound ? kExitUsage
                                                                          : kExitFailure;
}

std::string Human(int64_t bytes) {
  char buf[32];
  if (bytes >= (1 << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / 1073741824.0);
  } else if (bytes >= (1 << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

std::string ShapeString(const ckpt::Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int Inspect(const std::string& path, bool json) {
  auto storage = ckpt::NewPosixStorage();
  auto src = ckpt::OpenCheckpoint(*storage, path);
  if (!src.ok()) return Fail("inspect", src.status());
  const ckpt::CheckpointMeta& m = src->meta;
  if (json) {
    std::cout << ckpt::MetadataToJson(m) << "\n";
    return 0;
  }
  int64_t file_bytes = 0;
  for (const auto& f : m.files) file_bytes += f.bytes;
  std::cout << src->dir << " (" << src->kind << ", producer '" << m.producer << "')\n"
            << "step " << m.step << ", saved by " << m.world_size << " rank(s), "
            << m.tensors.size() << " tensors (" << Human(m.TensorBytes()) << "), "
            << m.objects.size() << " objects, " << m.files.size() << " files ("
            << Human(file_bytes) << ")\n";
  std::cout << std::left << std::setw(44) << "tensor" << std::setw(6) << "dtype" << std::setw(20)
            << "shape" << std::setw(8) << "chunks" << "bytes\n";
  for (const auto& [name, t] : m.tensors) {
    int64_t b = 0;
    for (const auto& c : t.chunks) b += c.byte_len;
    std::cout << std::left << std::setw(44) << name << std::setw(6) << DTypeName(t.dtype)
              << std::setw(20) << ShapeString(t.shape) << std::setw(8) << t.chunks.size()
              << Human(b) << "\n";
  }
  for (const auto& [key, list] : m.objects) {
    std::cout << "object " << key << ": " << list.size() << " cop" << (list.size() == 1 ? "y" : "ies")
              << ", " << list.front().byte_len << " bytes"
              << (list.front().rank < 0 ? " (replicated)" : " (per rank)") << "\n";
  }
  return 0;
}

int Verify(const std::string& path) {
  auto storage = ckpt::NewPosixStorage();
  auto src = ckpt::OpenCheckpoint(*storage, path);
  if (!src.ok()) return Fail("verify", src.status());
  auto n = ckpt::VerifyChecksums(*storage, *src);
  if (!n.ok()) return Fail("verify", n.status());
  std::cout << src->dir << ": OK, " << *n << " chunks and objects match their xxh64 checksums ("
            << Human(src->meta.TensorBytes()) << ")\n";
  return 0;
}

struct ExportArgs {
  std::string path, out, max_shard, select, strip;
};

int Export(const ExportArgs& a) {
  auto storage = ckpt::NewPosixStorage();
  auto src = ckpt::OpenCheckpoint(*storage, a.path);
  if (!src.ok()) return Fail("export", src.status());
  // Keep the tensors under --select, renamed without --strip.
  std::map<std::string, ckpt::TensorMeta> kept;
  for (auto& [name, t] : src->meta.tensors) {
    if (!name.starts_with(a.select)) continue;
    std::string out = name;
    if (!a.strip.empty() && out.starts_with(a.strip)) out = out.substr(a.strip.size());
    kept[out] = t;
  }
  if (kept.empty()) {
    return Fail("export", InvalidArgumentError("no tensor name starts with '" + a.select + "'"));
  }
  src->meta.tensors = std::move(kept);
  ckpt::ExportOptions opts;
  if (!a.max_shard.empty()) {
    auto b = ParseBytes(a.max_shard);
    if (!b.ok()) return Fail("export", b.status());
    opts.max_shard_bytes = *b;
  }
  opts.metadata = {{"format", "pt"}, {"producer", "loom ckpt export"},
                   {"step", std::to_string(src->meta.step)}};
  const int64_t total = src->meta.TensorBytes();
  opts.progress = [total](int64_t done, int64_t) {
    if (total > (256 << 20)) std::fprintf(stderr, "\rexport: %s of %s", Human(done).c_str(),
                                          Human(total).c_str());
  };
  auto rep = ckpt::ExportSafetensors(*storage, *src, a.out, opts);
  if (total > (256 << 20)) std::fprintf(stderr, "\n");
  if (!rep.ok()) return Fail("export", rep.status());
  std::cout << "wrote " << a.out << ": " << rep->tensors << " tensors, " << Human(rep->bytes)
            << " in " << rep->files << " file(s); largest buffer held " << Human(rep->peak_tensor_bytes)
            << "\n";
  return 0;
}

int Import(const std::string& in, const std::string& root, int64_t step) {
  auto storage = ckpt::NewPosixStorage();
  auto src = ckpt::OpenCheckpoint(*storage, in);
  if (!src.ok()) return Fail("import", src.status());
  auto dir = ckpt::ImportAsCheckpoint(*storage, *src, root, step);
  if (!dir.ok()) return Fail("import", dir.status());
  std::cout << "wrote " << *dir << ": " << src->meta.tensors.size() << " tensors ("
            << Human(src->meta.TensorBytes()) << ") from " << in << "\n";
  return 0;
}

int Diff(const std::string& a, const std::string& b, double atol, bool tensors_only) {
  auto storage = ckpt::NewPosixStorage();
  auto sa = ckpt::OpenCheckpoint(*storage, a);
  if (!sa.ok()) return Fail("diff", sa.status());
  auto sb = ckpt::OpenCheckpoint(*storage, b);
  if (!sb.ok()) return Fail("diff", sb.status());
  auto diffs = ckpt::CompareCheckpoints(*storage, *sa, *sb, atol, !tensors_only);
  if (!diffs.ok()) return Fail("diff", diffs.status());
  int differing = 0;
  for (const auto& d : *diffs) {
    if (d.problem.empty()) continue;
    ++differing;
    std::cout << d.name << ": " << d.problem;
    if (d.problem == "values" && d.differing > 0) {
      std::cout << " (" << d.differing << " elements differ, max |a-b| " << d.max_abs_diff << ")";
    }
    std::cout << "\n";
  }
  std::cout << diffs->size() << " compared, " << differing << " differ"
            << (atol > 0 ? " (atol " + std::to_string(atol) + ")" : " (bit-exact)") << "\n";
  return differing == 0 ? 0 : kExitFailure;
}

int Report(const std::string& root) {
  auto rows = ckpt::SummarizeTelemetry(root);
  if (!rows.ok()) return Fail("report", rows.status());
  std::cout << std::left << std::setw(8) << "step" << std::setw(10) << "stage" << std::setw(7)
            << "ranks" << std::setw(11) << "min ms" << std::setw(11) << "median ms"
            << std::setw(11) << "max ms" << std::setw(12) << "bytes" << "slow ranks\n";
  int flagged = 0;
  for (const auto& r : *rows) {
    std::string slow;
    for (int k : r.slow_ranks) slow += (slow.empty() ? "" : ",") + std::to_string(k);
    flagged += !r.slow_ranks.empty();
    std::cout << std::left << std::setw(8) << r.step << std::setw(10) << r.stage << std::setw(7)
              << r.ranks << std::fixed << std::setprecision(1) << std::setw(11) << r.min_s * 1e3
              << std::setw(11) << r.median_s * 1e3 << std::setw(11) << r.max_s * 1e3
              << std::setw(12) << Human(r.bytes) << (slow.empty() ? "-" : slow) << "\n";
  }
  std::cout << rows->size() << " (step, stage) rows; " << flagged
            << " with ranks slower than median + max(3 MAD, 10%, 5 ms)\n";
  return 0;
}

}  // namespace

void RegisterCkpt(CLI::App& app, CliContext* ctx) {
  auto* ck = app.add_subcommand("ckpt", "inspect, verify, convert and compare checkpoints");
  ck->require_subcommand(1);

  auto* inspect = ck->add_subcommand("inspect", "list a checkpoint's tensors, objects and files");
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  inspect->add_option("path", *path, "checkpoint root, step directory or safetensors")->required();
  inspect->add_flag("--json", *json, "print the metadata as JSON");
  inspect->callback([=] { ctx->exit_code = Inspect(*path, *json); });

  auto* verify = ck->add_subcommand("verify", "re-read every chunk and check its xxh64");
  auto vpath = std::make_shared<std::string>();
  verify->add_option("path", *vpath, "checkpoint root or step directory")->required();
  verify->callback([=] { ctx->exit_code = Verify(*vpath); });

  auto* exp = ck->add_subcommand("export", "write a checkpoint as Hugging Face safetensors");
  auto ea = std::make_shared<ExportArgs>();
  exp->add_option("path", ea->path, "checkpoint root or step directory")->required();
  exp->add_option("--safetensors", ea->out,
                  "output .safetensors file (or directory with --max-shard)")->required();
  exp->add_option("--max-shard", ea->max_shard, "split into files of at most this size (5GiB)");
  exp->add_option("--select", ea->select, "only tensors whose names start with this (model.)");
  exp->add_option("--strip", ea->strip, "remove this prefix from the names (model.)");
  exp->callback([=] { ctx->exit_code = Export(*ea); });

  auto* imp = ck->add_subcommand("import", "turn safetensors into a loom checkpoint");
  auto in = std::make_shared<std::string>();
  auto root = std::make_shared<std::string>();
  auto step = std::make_shared<int64_t>(0);
  imp->add_option("input", *in, ".safetensors file or directory with model.safetensors.index.json")
      ->required();
  imp->add_option("root", *root, "checkpoint root to write step_<N> into")->required();
  imp->add_option("--step", *step, "step number of the new checkpoint");
  imp->callback([=] { ctx->exit_code = Import(*in, *root, *step); });

  auto* diff = ck->add_subcommand("diff", "compare the tensors of two checkpoints");
  auto a = std::make_shared<std::string>();
  auto b = std::make_shared<std::string>();
  auto atol = std::make_shared<double>(0);
  diff->add_option("a", *a, "checkpoint (or safetensors)")->required();
  diff->add_option("b", *b, "checkpoint (or safetensors)")->required();
  auto tensors_only = std::make_shared<bool>(false);
  diff->add_option("--atol", *atol, "absolute tolerance (0: bit-exact)");
  diff->add_flag("--tensors-only", *tensors_only, "ignore objects (trainer state, RNG, ...)");
  diff->callback([=] { ctx->exit_code = Diff(*a, *b, *atol, *tensors_only); });

  auto* report = ck->add_subcommand("report", "per-stage save times across ranks, slow ranks flagged");
  auto rroot = std::make_shared<std::string>();
  report->add_option("root", *rroot, "checkpoint root (holds telemetry/)")->required();
  report->callback([=] { ctx->exit_code = Report(*rroot); });
}

}  // namespace loom::cli
