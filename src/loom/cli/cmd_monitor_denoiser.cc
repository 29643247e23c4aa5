// `loom monitor denoiser train|check`: Minder's per-metric LSTM-VAE denoisers
// (src/loom/monitor/fleet/denoise/).
//   train: windows of healthy machines outside fault intervals of a job (a directory written by
//          `loom monitor simulate`, or a job simulated on the spot) -> MODEL_DIR/<metric>.json.
//   check: per metric, the reconstruction MSE (denoised vs input window) on healthy and on faulty
//          windows of a job, and the torch-free inference CPU time per window (DenoiseBatch).
//
//   loom monitor denoiser train --simulate --sim-seed 1 --out /tmp/vae
//   loom monitor denoiser check --model /tmp/vae --simulate --sim-seed 2
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "loom/cli/commands.h"
#include "loom/monitor/fleet/denoise/denoise_windows.h"
#include "loom/monitor/fleet/denoise/lstm_vae.h"
#include "loom/monitor/fleet/denoise/lstm_vae_json.h"
#include "loom/monitor/fleet/denoise/lstm_vae_trainer_torch.h"
#include "loom/monitor/fleet/sim/fleet_io.h"
#include "loom/monitor/fleet/sim/fleet_simulator.h"

namespace loom::cli {
namespace {

using monitor::LabelledJob;

// Where the jobs come from: --job DIR (repeatable) or --simulate with a few simulator knobs.
struct JobSource {
  std::vector<std::string> job_dirs;
  bool simulate = false;
  int machines = 64;
  int64_t seconds = 2 * 3600;
  std::string sim_seeds = "1";  // comma-separated: one simulated job per seed
  std::string metrics;          // comma-separated; empty = every metric of the job
  int window = 8;
  int64_t max_windows = 20000;
  int64_t norm_horizon_s = 600;
};

struct TrainArgs {
  JobSource source;
  std::string out;
  monitor::LstmVaeTrainOptions options;
};

struct CheckArgs {
  JobSource source;
  std::string model;
  bool json = false;
};

void AddSourceOptions(CLI::App* cmd, JobSource* s, const std::string& default_seeds) {
  s->sim_seeds = default_seeds;
  auto* job = cmd->add_option("--job", s->job_dirs,
                              "job directory (written by `loom monitor simulate`); repeatable");
  auto* sim = cmd->add_flag("--simulate", s->simulate, "simulate the job instead of reading one");
  job->excludes(sim);
  cmd->add_option("--machines", s->machines, "simulated machines (64)");
  cmd->add_option("--seconds", s->seconds, "simulated seconds (7200)");
  cmd->add_option("--sim-seed", s->sim_seeds,
                  "simulator seeds, comma-separated, one job each (" + default_seeds +
                      "; keep train and check seeds apart)");
  cmd->add_option("--metrics", s->metrics, "comma-separated metrics (all of the job's)");
  cmd->add_option("--window", s->window, "samples per window (8)");
  cmd->add_option("--max-windows", s->max_windows, "at most this many windows per metric (20000)");
  cmd->add_option("--norm-horizon", s->norm_horizon_s,
                  "min-max normalisation horizon in seconds, as Minder's (600; 0 = the job)");
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Loads or simulates the jobs; the description names their origin. kExitUsage on bad flags.
int GetJobs(const JobSource& s, const char* cmd, std::vector<LabelledJob>* jobs,
            std::string* description) {
  auto usage = [&](const std::string& what) {
    std::fprintf(stderr, "loom monitor denoiser %s: %s\n", cmd, what.c_str());
    return kExitUsage;
  };
  if (s.job_dirs.empty() == !s.simulate) return usage("give --job DIR or --simulate");
  if (s.simulate) {
    monitor::SimConfig config;
    config.machines = s.machines;
    config.seconds = s.seconds;
    if (Status st = monitor::ValidateSimConfig(config); !st.ok()) return usage(st.ToString());
    const std::vector<std::string> seeds = SplitCommas(s.sim_seeds);
    if (seeds.empty()) return usage("--sim-seed needs at least one seed");
    for (const std::string& seed : seeds) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(seed.c_str(), &end, 10);
      if (end == seed.c_str() || *end != '\0') return usage("bad --sim-seed '" + seed + "'");
      jobs->push_back(monitor::SimulateJob(config, v));
    }
    *description = "simulated: " + std::to_string(s.machines) + " machines, " +
                   std::to_string(s.seconds) + " s, sim seed " + s.sim_seeds;
    return 0;
  }
  for (const std::string& dir : s.job_dirs) {
    Result<LabelledJob> loaded = monitor::LoadJob(dir);
    if (!loaded.ok()) {
      std::fprintf(stderr, "loom monitor denoiser %s: %s\n", cmd,
                   loaded.status().ToString().c_str());
      return kExitFailure;
    }
    jobs->push_back(std::move(*loaded));
    *description += (description->empty() ? "job " : ", ") + dir;
  }
  return 0;
}

// One metric's windows of every job, each job contributing up to max_windows / jobs.
Result<std::vector<float>> JobsWindows(const std::vector<LabelledJob>& jobs, const JobSource& s,
                                       const std::string& metric, monitor::WindowKind kind,
                                       uint64_t seed, int64_t* count) {
  std::vector<float> all;
  *count = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    monitor::WindowOptions o;
    o.window = s.window;
    o.max_windows = s.max_windows > 0 ? std::max<int64_t>(1, s.max_windows / jobs.size()) : 0;
    o.seed = seed + j;
    o.norm_horizon_s = s.norm_horizon_s;
    LOOM_ASSIGN_OR_RETURN(monitor::MetricWindows w, monitor::CutWindows(jobs[j], metric, kind, o));
    all.insert(all.end(), w.values.begin(), w.values.end());
    *count += w.count;
  }
  return all;
}

std::vector<std::string> Metrics(const JobSource& s, const LabelledJob& job) {
  return s.metrics.empty() ? job.series.metric_names : SplitCommas(s.metrics);
}

int Train(TrainArgs a) {
  std::vector<LabelledJob> jobs;
  std::string origin;
  if (int rc = GetJobs(a.source, "train", &jobs, &origin); rc != 0) return rc;
  const LabelledJob& job = jobs.front();
  a.options.window = a.source.window;
  std::printf("LSTM-VAE denoisers from %s -> %s\n", origin.c_str(), a.out.c_str());
  std::printf("%-12s %9s %7s %7s %11s %11s %8s %8s\n", "metric", "windows", "epochs", "best",
              "train MSE", "val MSE", "wall s", "cpu s");
  for (const std::string& metric : Metrics(a.source, job)) {
    int64_t count = 0;
    Result<std::vector<float>> w =
        JobsWindows(jobs, a.source, metric, monitor::WindowKind::kHealthy, a.options.seed, &count);
    Result<monitor::LstmVaeModel> model = w.ok()
                                              ? monitor::TrainLstmVae(metric, *w, a.options, origin)
                                              : Result<monitor::LstmVaeModel>(w.status());
    if (model.ok()) model->training.norm_horizon_s = a.source.norm_horizon_s;
    Status saved = model.ok() ? monitor::SaveLstmVaeModel(*model, a.out) : model.status();
    if (!saved.ok()) {
      std::fprintf(stderr, "loom monitor denoiser train: metric '%s': %s\n", metric.c_str(),
                   saved.ToString().c_str());
      return kExitFailure;
    }
    const monitor::LstmVaeTrainingInfo& t = model->training;
    std::printf("%-12s %9lld %7d %7d %11.3g %11.3g %8.2f %8.2f\n", metric.c_str(),
                static_cast<long long>(t.train_windows + t.validation_windows), t.epochs,
                t.best_epoch, t.train_mse, t.validation_mse, t.seconds, t.cpu_seconds);
    std::fflush(stdout);
  }
  return 0;
}

// CPU time of this thread: inference timings that a busy machine does not inflate.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double Mse(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.empty()) return NAN;
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (static_cast<double>(a[i]) - b[i]) * (a[i] - b[i]);
  return s / static_cast<double>(a.size());
}

int Check(const CheckArgs& a) {
  std::vector<LabelledJob> jobs;
  std::string origin;
  if (int rc = GetJobs(a.source, "check", &jobs, &origin); rc != 0) return rc;
  const LabelledJob& job = jobs.front();
  const std::vector<std::string> metrics = Metrics(a.source, job);
  // Every model first: a missing or mismatched one fails before any output.
  std::vector<std::unique_ptr<monitor::LstmVaeDenoiser>> models;
  for (const std::string& metric : metrics) {
    Result<monitor::LstmVaeModel> model =
        monitor::ReadLstmVaeModel(a.model, metric, a.source.window);
    Result<std::unique_ptr<monitor::LstmVaeDenoiser>> d =
        model.ok() ? monitor::LstmVaeDenoiser::Create(*model)
                   : Result<std::unique_ptr<monitor::LstmVaeDenoiser>>(model.status());
    if (!d.ok()) {
      std::fprintf(stderr, "loom monitor denoiser check: metric '%s': %s\n", metric.c_str(),
                   d.status().ToString().c_str());
      return kExitFailure;
    }
    models.push_back(std::move(*d));
  }
  nlohmann::json rows = nlohmann::json::array();
  if (!a.json) {
    std::printf(
        "LSTM-VAE denoisers %s on %s\n(reconstruction MSE of normalised windows; "
        "inference CPU us per window, DenoiseBatch and one Denoise call at a time)\n",
        a.model.c_str(), origin.c_str());
    std::printf("%-12s %9s %12s %9s %12s %7s %11s %11s\n", "metric", "healthy", "healthy MSE",
                "faulty", "faulty MSE", "ratio", "us/w batch", "us/w single");
  }
  for (size_t m = 0; m < metrics.size(); ++m) {
    const std::string& metric = metrics[m];
    auto fail = [&](const Status& s) {
      std::fprintf(stderr, "loom monitor denoiser check: metric '%s': %s\n", metric.c_str(),
                   s.ToString().c_str());
      return kExitFailure;
    };
    const monitor::LstmVaeDenoiser& vae = *models[m];
    double mse[2];
    int64_t count[2];
    double us_per_window = NAN, us_per_window_one = NAN;
    for (auto kind : {monitor::WindowKind::kHealthy, monitor::WindowKind::kFaulty}) {
      const int k = kind == monitor::WindowKind::kHealthy ? 0 : 1;
      Result<std::vector<float>> w = JobsWindows(jobs, a.source, metric, kind, 1, &count[k]);
      if (!w.ok()) return fail(w.status());
      std::vector<float> recon(w->size());
      const double start = ThreadCpuSeconds();
      vae.DenoiseBatch(*w, recon);
      const double s = ThreadCpuSeconds() - start;
      mse[k] = Mse(recon, *w);
      if (k == 0 && count[k] > 0) {
        us_per_window = s / static_cast<double>(count[k]) * 1e6;
        const double one_start = ThreadCpuSeconds();  // the Denoiser interface: one at a time
        const size_t w_len = static_cast<size_t>(a.source.window);
        for (size_t i = 0; i < w->size(); i += w_len) {
          vae.Denoise(std::span<const float>(w->data() + i, w_len),
                      std::span<float>(recon.data() + i, w_len));
        }
        us_per_window_one = (ThreadCpuSeconds() - one_start) / static_cast<double>(count[k]) * 1e6;
      }
    }
    rows.push_back({{"metric", metric},
                    {"healthy_windows", count[0]},
                    {"healthy_mse", mse[0]},
                    {"faulty_windows", count[1]},
                    {"faulty_mse", count[1] ? mse[1] : 0.0},
                    {"cpu_us_per_window_batch", us_per_window},
                    {"cpu_us_per_window_one", us_per_window_one}});
    if (count[1] == 0) rows.back()["faulty_mse"] = nullptr;
    if (!a.json) {
      std::printf("%-12s %9lld %12.3g %9lld %12.3g %7.2f %11.3f %11.3f\n", metric.c_str(),
                  static_cast<long long>(count[0]), mse[0], static_cast<long long>(count[1]),
                  mse[1], mse[1] / mse[0], us_per_window, us_per_window_one);
    }
  }
  if (a.json) {
    std::printf(
        "%s\n",
        nlohmann::json({{"model", a.model}, {"data", origin}, {"metrics", rows}}).dump(2).c_str());
  }
  return 0;
}

}  // namespace

void RegisterMonitorDenoiser(CLI::App& monitor, CliContext* ctx) {
  auto* den = monitor.add_subcommand("denoiser", "Minder's per-metric LSTM-VAE denoisers");
  den->require_subcommand(1);

  auto* train = den->add_subcommand("train", "train one LSTM-VAE per metric on healthy windows");
  auto ta = std::make_shared<TrainArgs>();
  AddSourceOptions(train, &ta->source, /*default_seeds=*/"1");
  train->add_option("--out", ta->out, "model directory (one <metric>.json each)")->required();
  train->add_option("--epochs", ta->options.max_epochs, "maximum epochs (60; early stopping)");
  train->add_option("--min-epochs", ta->options.min_epochs, "no early stop before (10)");
  train->add_option("--patience", ta->options.patience, "early-stopping patience in epochs (5)");
  train->add_option("--batch", ta->options.batch_size, "windows per Adam step (128)");
  train->add_option("--lr", ta->options.learning_rate, "Adam learning rate (0.01)");
  train->add_option("--beta", ta->options.beta, "KL weight (0.0001)");
  train->add_option("--kl-warmup", ta->options.kl_warmup_epochs,
                    "epochs over which the KL weight grows from 0 (10)");
  train->add_option("--hidden", ta->options.hidden, "LSTM hidden size (4)");
  train->add_option("--latent", ta->options.latent, "latent size (8)");
  train->add_option("--seed", ta->options.seed, "training seed (0)");
  train->add_option("--threads", ta->options.threads, "libtorch threads (1)");
  train->add_flag("--verbose", ta->options.verbose, "one line per epoch on stderr");
  train->callback([=] { ctx->exit_code = Train(*ta); });

  auto* check = den->add_subcommand(
      "check", "reconstruction MSE on healthy vs faulty windows, inference time per window");
  auto ca = std::make_shared<CheckArgs>();
  AddSourceOptions(check, &ca->source, /*default_seeds=*/"2");
  check->add_option("--model", ca->model, "model directory")->required();
  check->add_flag("--json", ca->json, "print JSON instead of the table");
  check->callback([=] { ctx->exit_code = Check(*ca); });
}

}  // namespace loom::cli
