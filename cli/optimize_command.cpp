// `opprof optimize`: profile-guided optimization. The rewrites run inside the PyTorch process, so the loop
// is Python (python -m opprof.optimize, python/opprof/optimize/); this command checks the request and runs
// it with opprof's Python side on PYTHONPATH and this executable as the engine it calls.
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "opprof/capture/subprocess.hpp"
#include "opprof/pipeline/capture_plan.hpp"
#include "opprof/util/error.hpp"

namespace opprof::cli {
namespace {

struct OptimizeOptions {
  std::string workload, output, profile, compile = "inductor", allow_precision, metrics, only, device;
  std::string python = "python3";
  bool train = false, skip_ncu = false;
  double tolerance = 1e-2, exact_tolerance = 1e-4, min_gain = 0.02;
  int steps = 20, profile_steps = 3;
};

std::vector<std::string> driver_argv(const OptimizeOptions& o) {
  std::vector<std::string> a = {o.python, "-m", "opprof.optimize", o.workload, "--compile", o.compile,
                                "--tolerance", fmt::format("{}", o.tolerance),
                                "--exact-tolerance", fmt::format("{}", o.exact_tolerance),
                                "--min-gain", fmt::format("{}", o.min_gain), "--steps", std::to_string(o.steps),
                                "--profile-steps", std::to_string(o.profile_steps)};
  const std::pair<const char*, const std::string*> valued[] = {
      {"--out", &o.output}, {"--profile", &o.profile}, {"--allow-precision", &o.allow_precision},
      {"--metrics", &o.metrics}, {"--only", &o.only}, {"--device", &o.device}};
  for (const auto& [flag, value] : valued)
    if (!value->empty()) a.insert(a.end(), {flag, *value});
  if (o.train) a.push_back("--train");
  if (o.skip_ncu) a.push_back("--skip-ncu");
  return a;
}

int run_optimize(const OptimizeOptions& o, const std::vector<std::string>& program) {
  if (!program.empty())
    throw InputError("opprof optimize", "the optimizer rewrites a model in its own process: give a workload module "
                                        "(get_model_and_input() -> (model, input)), not a program after --");
  if (!std::filesystem::exists(o.workload)) throw InputError(o.workload, "no such workload file");
  if (!o.profile.empty() && !std::filesystem::exists(o.profile)) throw InputError(o.profile, "no such profile");
  if (o.steps < 1 || o.profile_steps < 1) throw InputError("opprof optimize", "--steps and --profile-steps must be >= 1");
  if (!(o.tolerance > 0) || !(o.exact_tolerance > 0))
    throw InputError("opprof optimize", "--tolerance and --exact-tolerance must be > 0");
  ChildSpec child;
  child.argv = driver_argv(o);
  child.env = python_env(python_side_environment());
  const ChildResult result = run_child(child);
  if (!result.started) throw InputError(o.python, result.error);
  if (interrupted()) return 130;
  return result.signal ? 1 : result.exit_code;
}

}  // namespace

Command add_optimize_command(CLI::App& app) {
  auto o = std::make_shared<OptimizeOptions>();
  auto* cmd = app.add_subcommand(
      "optimize", "Turn a workload's profile into graph rewrites: apply, check numerics, measure, keep what pays");
  cmd->add_option("workload", o->workload, "Workload module exposing get_model_and_input() -> (model, input)")
      ->required();
  cmd->add_option("-o,--output", o->output, "Output directory (default: opprof-optimize-<name>)");
  cmd->add_option("--profile", o->profile, "An existing profile of the workload (default: run opprof profile first)");
  cmd->add_option("--compile", o->compile, "How the workload runs: inductor or eager")
      ->check(CLI::IsMember({"inductor", "eager"}))
      ->capture_default_str();
  cmd->add_flag("--train", o->train, "Optimize a training step (outputs and gradients are checked)");
  cmd->add_option("--allow-precision", o->allow_precision,
                  "Allow a lower matmul precision (the precision tier): tf32, bf16 or fp16; default none")
      ->check(CLI::IsMember({"tf32", "bf16", "fp16"}));
  cmd->add_option("--tolerance", o->tolerance, "Precision tier: max relative error of outputs and gradients")
      ->capture_default_str();
  cmd->add_option("--exact-tolerance", o->exact_tolerance,
                  "Exact tier: least bound on relative error (the bound is the larger of this and 10x the compiled\n"
                  "model's own FP32 deviation from eager)")
      ->capture_default_str();
  cmd->add_option("--min-gain", o->min_gain, "Keep a rewrite when it is at least this much faster (0.02: 2 %)")
      ->capture_default_str();
  cmd->add_option("--steps", o->steps, "Wall-time steps per variant (CUDA events; median and spread)")->capture_default_str();
  cmd->add_option("--profile-steps", o->profile_steps, "Steps in each variant's kernel profile")->capture_default_str();
  cmd->add_flag("--skip-ncu", o->skip_ncu, "Baseline profile without ncu counters (timeline evidence only)");
  cmd->add_option("--metrics", o->metrics, "Metric-set file for the baseline profile");
  cmd->add_option("--only", o->only, "Comma-separated rewrites to try (default: all the rules propose)");
  cmd->add_option("--device", o->device, "cuda or cpu (default: cuda when available)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  cmd->add_option("--python", o->python, "Python interpreter with torch")->capture_default_str();
  cmd->footer(
      "Writes optimize_report.txt and .json, the kernel profile of every variant (profiles/*/profile.db) and\n"
      "opprof_optimized.py (optimize(model): the applied rewrites, for the user's code). Exit status: 0 done,\n"
      "2 bad input, 1 failure.");
  return {cmd, [o](const std::vector<std::string>& program) { return run_optimize(*o, program); },
          /*takes_program=*/true};
}

}  // namespace opprof::cli
