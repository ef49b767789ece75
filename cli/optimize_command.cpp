// `opprof optimize`: profile-guided optimization. The rewrites run inside the PyTorch process, so the loop
// is Python (python -m opprof.optimize, python/opprof/optimize/); this command checks the request and runs
// it with opprof's Python side on PYTHONPATH and this executable as the engine it calls, then renders the
// driver's optimize_report.json as HTML (report/optimize_html.hpp). --html-from renders an existing one.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "opprof/capture/subprocess.hpp"
#include "opprof/pipeline/capture_plan.hpp"
#include "opprof/report/optimize_html.hpp"
#include "opprof/util/atomic_file.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/interrupt.hpp"

namespace opprof::cli {
namespace {

constexpr const char* kReportJsonFile = "optimize_report.json";  // python/opprof/optimize/report.py

struct OptimizeOptions {
  std::string workload, output, profile, compile = "inductor", allow_precision, metrics, only, device;
  std::string html_from;  // --html-from REPORT.json: render it again, run nothing
  std::string python = "python3";
  bool train = false, skip_ncu = false;
  double tolerance = 1e-2, exact_tolerance = 1e-4, min_gain = 0.02;
  int steps = 20, profile_steps = 3;
};

// The driver's output directory: -o, else the driver's own default, named here so that the CLI knows
// where the report will be.
std::string output_directory(const OptimizeOptions& o) {
  return o.output.empty() ? "opprof-optimize-" + std::filesystem::path(o.workload).stem().string() : o.output;
}

std::vector<std::string> driver_argv(const OptimizeOptions& o) {
  std::vector<std::string> a = {o.python, "-m", "opprof.optimize", o.workload, "--compile", o.compile,
                                "--tolerance", fmt::format("{}", o.tolerance),
                                "--exact-tolerance", fmt::format("{}", o.exact_tolerance),
                                "--min-gain", fmt::format("{}", o.min_gain), "--steps", std::to_string(o.steps),
                                "--profile-steps", std::to_string(o.profile_steps)};
  const std::string out = output_directory(o);
  const std::pair<const char*, const std::string*> valued[] = {
      {"--out", &out}, {"--profile", &o.profile}, {"--allow-precision", &o.allow_precision},
      {"--metrics", &o.metrics}, {"--only", &o.only}, {"--device", &o.device}};
  for (const auto& [flag, value] : valued)
    if (!value->empty()) a.insert(a.end(), {flag, *value});
  if (o.train) a.push_back("--train");
  if (o.skip_ncu) a.push_back("--skip-ncu");
  return a;
}

// Whether file was written at or after since. File times come from the kernel's coarse clock, which can
// lag a clock read just before the write by a tick: the caller's since allows for that.
bool written_since(const std::filesystem::path& file, std::filesystem::file_time_type since) {
  std::error_code ec;
  const std::filesystem::file_time_type written = std::filesystem::last_write_time(file, ec);
  return !ec && written >= since;
}

int render_again(const OptimizeOptions& o) {
  const std::string html =
      o.output.empty() ? (std::filesystem::path(o.html_from).parent_path() / kOptimizeHtmlFile).string() : o.output;
  check_output_file(html);
  write_optimize_html(o.html_from, html);
  fmt::print(stderr, "opprof: HTML report written to {}\n", html);
  return 0;
}

int run_optimize(const OptimizeOptions& o, const std::vector<std::string>& program) {
  if (!program.empty())
    throw InputError("opprof optimize", "the optimizer rewrites a model in its own process: give a workload module "
                                        "(get_model_and_input() -> (model, input)), not a program after --");
  if (!o.html_from.empty()) return render_again(o);
  if (o.workload.empty()) throw InputError("opprof optimize", "give a workload module, or --html-from REPORT.json");
  if (!std::filesystem::exists(o.workload)) throw InputError(o.workload, "no such workload file");
  if (!o.profile.empty() && !std::filesystem::exists(o.profile)) throw InputError(o.profile, "no such profile");
  if (o.steps < 1 || o.profile_steps < 1) throw InputError("opprof optimize", "--steps and --profile-steps must be >= 1");
  if (!(o.tolerance > 0) || !(o.exact_tolerance > 0))
    throw InputError("opprof optimize", "--tolerance and --exact-tolerance must be > 0");
  ChildSpec child;
  child.argv = driver_argv(o);
  child.env = python_env(python_side_environment());
  const auto started = std::filesystem::file_time_type::clock::now() - std::chrono::seconds(1);
  {
    // An interrupt goes to the driver's process group; opprof waits for it to wind down, then says 130.
    const DeferInterrupts defer;
    const ChildResult result = run_child(child);
    if (!result.started) throw InputError(o.python, result.error);
    if (interrupted()) return 130;
    if (result.signal || result.exit_code != 0) return result.signal ? 1 : result.exit_code;
  }
  const std::filesystem::path dir = output_directory(o);
  const std::filesystem::path json = dir / kReportJsonFile;
  if (!written_since(json, started)) {  // none, or one an earlier run left
    fmt::print(stderr, "opprof: note: the optimizer wrote no {} in {}: no HTML report\n", kReportJsonFile,
               dir.string());
    return 0;
  }
  const std::string html = (dir / kOptimizeHtmlFile).string();
  try {
    write_optimize_html(json.string(), html);
  } catch (const InputError& e) {
    // The driver's own report unreadable is opprof's failure, not bad input of the user's.
    throw OutputError(fmt::format("{} not written: {}", html, e.what()));
  }
  fmt::print(stderr, "opprof: HTML report written to {}\n", html);
  return 0;
}

}  // namespace

Command add_optimize_command(CLI::App& app) {
  auto o = std::make_shared<OptimizeOptions>();
  auto* cmd = app.add_subcommand(
      "optimize", "Turn a workload's profile into graph rewrites: apply, check numerics, measure, keep what pays");
  CLI::Option* workload =
      cmd->add_option("workload", o->workload, "Workload module exposing get_model_and_input() -> (model, input)");
  cmd->add_option("-o,--output", o->output,
                  "Output directory (default: opprof-optimize-<name>); with --html-from, the HTML file\n"
                  "(default: optimize_report.html beside the JSON)");
  // The options of a run, which --html-from (render a report again, run nothing) refuses.
  const std::vector<CLI::Option*> run_options = {
      workload,
      cmd->add_option("--profile", o->profile,
                      "An existing profile of the workload (default: run opprof profile first)"),
      cmd->add_option("--compile", o->compile, "How the workload runs: inductor or eager")
          ->check(CLI::IsMember({"inductor", "eager"}))
          ->capture_default_str(),
      cmd->add_flag("--train", o->train, "Optimize a training step (outputs and gradients are checked)"),
      cmd->add_option("--allow-precision", o->allow_precision,
                      "Allow a lower matmul precision (the precision tier): tf32, bf16 or fp16; default none")
          ->check(CLI::IsMember({"tf32", "bf16", "fp16"})),
      cmd->add_option("--tolerance", o->tolerance, "Precision tier: max relative error of outputs and gradients")
          ->capture_default_str(),
      cmd->add_option("--exact-tolerance", o->exact_tolerance,
                      "Exact tier: least bound on relative error (the bound is the larger of this and 10x the\n"
                      "compiled model's own FP32 deviation from eager)")
          ->capture_default_str(),
      cmd->add_option("--min-gain", o->min_gain, "Keep a rewrite when it is at least this much faster (0.02: 2 %)")
          ->capture_default_str(),
      cmd->add_option("--steps", o->steps, "Wall-time steps per variant (CUDA events; median and spread)")
          ->capture_default_str(),
      cmd->add_option("--profile-steps", o->profile_steps, "Steps in each variant's kernel profile")
          ->capture_default_str(),
      cmd->add_flag("--skip-ncu", o->skip_ncu, "Baseline profile without ncu counters (timeline evidence only)"),
      cmd->add_option("--metrics", o->metrics, "Metric-set file for the baseline profile"),
      cmd->add_option("--only", o->only, "Comma-separated rewrites to try (default: all the rules propose)"),
      cmd->add_option("--device", o->device, "cuda or cpu (default: cuda when available)")
          ->check(CLI::IsMember({"cuda", "cpu"})),
      cmd->add_option("--python", o->python, "Python interpreter with torch")->capture_default_str(),
  };
  cmd->add_option("--html-from", o->html_from,
                  "Render an existing optimize_report.json as HTML again, without running anything");
  cmd->footer(
      "Writes optimize_report.txt, .json and .html (the HTML page: what was tried, applied and rejected and why,\n"
      "with the numerics of each step, and charts of kernel and wall time per step), the kernel profile of every\n"
      "variant (profiles/*/profile.db) and opprof_optimized.py (optimize(model): the applied rewrites, for the\n"
      "user's code). `opprof optimize --html-from DIR/optimize_report.json [-o page.html]` renders the page again.\n"
      "Exit status: 0 done, 2 bad input, 1 failure; a driver's own non-zero status is passed on.");
  // Checked here rather than with CLI11's excludes, which would list --html-from under every option.
  auto run = [o, run_options](const std::vector<std::string>& program) {
    if (!o->html_from.empty())
      for (const CLI::Option* option : run_options)
        if (option->count() > 0)
          throw InputError("--html-from", fmt::format("renders an existing report and runs nothing: {} does not go "
                                                      "with it",
                                                      option->get_name()));
    return run_optimize(*o, program);
  };
  return {cmd, run, /*takes_program=*/true};
}

}  // namespace opprof::cli
