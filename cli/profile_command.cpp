// `opprof profile`: capture (pass A), replay with ncu (pass B) and attribute, in one command on a GPU.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "cli/progress_printer.hpp"
#include "opprof/pipeline/profile_run.hpp"

namespace opprof::cli {
namespace {

struct ProfileOptions {
  ProfileRequest request;
  bool quiet = false;
};

int run_profile(const ProfileOptions& o) {
  ProgressPrinter printer(o.quiet);
  const ProfileOutcome outcome = opprof::run_profile(o.request, &printer);
  if (outcome.database.empty()) return outcome.exit_code;
  fmt::print("{}", outcome.report_text);
  if (!outcome.clocks_locked)
    printer.on_profile(progress::Notice{
        "note: clocks were not locked; kernel durations follow the GPU's boost clock (see --lock-clocks)"});
  printer.on_profile(progress::Notice{"profile written to " + outcome.output_dir.string()});
  return outcome.exit_code;
}

}  // namespace

Command add_profile_command(CLI::App& app) {
  auto options = std::make_shared<ProfileOptions>();
  ProfileRequest& o = options->request;
  auto* cmd = app.add_subcommand(
      "profile",
      "Capture a workload's timeline, replay its kernels under ncu and attribute them (needs an NVIDIA GPU)");
  cmd->add_option("workload", o.workload,
                  "Workload module exposing get_model_and_input() -> (model, input); or, instead, a program after --:\n"
                  "`opprof profile [options] -- python train.py --lr 3e-4`");
  cmd->add_option("--compile", o.compile, "eager or inductor (workload modules)")
      ->check(CLI::IsMember({"eager", "inductor"}))
      ->capture_default_str();
  cmd->add_option("--compile-mode", o.compile_mode,
                  "torch.compile mode with --compile inductor: default, reduce-overhead (CUDA graphs), max-autotune, ...")
      ->check(CLI::IsMember({"default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"}));
  cmd->add_option("--warmup", o.warmup, "Iterations before the window (workload modules)")->capture_default_str();
  cmd->add_option("--iters", o.iters, "Measured iterations inside the window (workload modules)")->capture_default_str();
  cmd->add_flag("--train", o.train, "Run forward and backward (default: forward under torch.no_grad())");
  cmd->add_option("-o,--output", o.output, "Output directory (default: opprof-<name>-<time>)")
      ->check([](const std::string& v) { return v.empty() ? std::string("the output directory is an empty path") : ""; });
  cmd->add_option("--metrics", o.metrics,
                  "Metric set: quick (1-2 replay passes: duration, SM/DRAM/tensor throughput, occupancy), default,\n"
                  "full (default + warp stalls, bank conflicts, sectors), or a metric-set file");
  cmd->add_option("--dedup", o.dedup,
                  "Replay less in pass B (docs/dedup.md): layers (one instance per structural class of module\n"
                  "instances, counters propagated to the others), kernels (the first launch of each launch\n"
                  "configuration, more where pass A's durations say its launches do other work), or off")
      ->check(CLI::IsMember(enum_words(kDedupModeNames, {DedupMode::kOff, DedupMode::kLayers, DedupMode::kKernels})))
      ->capture_default_str();
  cmd->add_option("--dedup-selection", o.dedup_selection,
                  "How pass B replays only the plan's kernels (docs/dedup.md): per_launch_config_mangled (ncu's\n"
                  "per-launch-config filter keyed by the mangled name: every capture kind, also dedups kernels\n"
                  "outside the layers), nvtx_modules (module hooks + ncu's NVTX exclude filter: exactly the plan's\n"
                  "layers; eager inference only), per_launch_config (the filter keyed by the function name, as ncu\n"
                  "does by default: fewer kernels, template instantiations share counters), or auto:\n"
                  "per_launch_config_mangled")
      ->check(CLI::IsMember([] {
        auto words = enum_words(kDedupSelectionNames, {DedupSelection::kPerLaunchConfigMangled,
                                                       DedupSelection::kNvtxModules, DedupSelection::kPerLaunchConfig});
        words.insert(words.begin(), "auto");
        return words;
      }()))
      ->capture_default_str();
  cmd->add_option("--dedup-verify", o.dedup_verify,
                  "Also replay K duplicates per class in full and report how far their counters are from the\n"
                  "representative's (per metric, duration-weighted median relative deviation)")
      ->capture_default_str();
  cmd->add_option("--pass-b-start", o.pass_b_start,
                  "When pass B's process starts: early (with pass A, under ncu --mode launch, which holds it at its\n"
                  "first CUDA call until pass A is done: its imports and model construction overlap pass A), after\n"
                  "pass A, or auto: early for a workload module (eager or compiled), after for a program. A job's\n"
                  "processes and --dedup-selection nvtx_modules always start after")
      ->check(CLI::IsMember({"auto", "early", "after"}))
      ->capture_default_str();
  cmd->add_option("--clock-control", o.clock_control, "ncu's clock control during replay: none or base")
      ->check(CLI::IsMember({"none", "base"}))
      ->capture_default_str();
  cmd->add_flag("--lock-clocks", o.lock_clocks,
                "Lock the SM clock to its base clock with nvidia-smi for both passes (needs permission; restored on exit)");
  cmd->add_option("--ncu", o.ncu, "Path to ncu (default: PATH, then /usr/local/cuda/bin/ncu)");
  cmd->add_option("--python", o.python, "Python interpreter with torch")->capture_default_str();
  cmd->add_flag("--skip-ncu", o.skip_ncu, "Timeline and attribution only (no hardware counters)");
  cmd->add_flag("--multi-process", o.multi_process,
                "The program starts the processes that run CUDA (a launcher): each writes its own capture folder\n"
                "(rank<R>/ from RANK or LOCAL_RANK, else pid<P>/), attributed into one profile with the rank of every\n"
                "row. Implied for `-- torchrun ... train.py` and `-- python -m torch.distributed.run ...`, whose\n"
                "processes also run opprof's capture runner");
  cmd->add_flag("-q,--quiet", options->quiet, "Less progress output");
  cmd->add_option("--backend", o.backend,
                  "Pass A's timeline capture: tracer (libopprof_tracer.so through CUDA/NVTX injection), torch\n"
                  "(torch.profiler, Kineto JSON), or auto: the tracer where it was built, else torch. The tracer\n"
                  "gives the same attribution at less overhead and also reaches CUDA-graph replays (docs/tracer.md)")
      ->check(CLI::IsMember({"auto", "torch", "tracer"}))
      ->capture_default_str();
  cmd->footer(
      "The output directory holds profile.db, report.txt, report.json and the raw artifacts (trace, ncu CSV and log,\n"
      "Inductor debug files, capture.json). Exit status: 0 done, 2 bad input or usage, 1 a failure or what the\n"
      "machine lacks (no GPU, no ncu on the PATH, no permission to read the counters).");
  return {cmd,
          [options](const std::vector<std::string>& program) {
            ProfileOptions run = *options;
            run.request.command = program;
            return run_profile(run);
          },
          /*takes_program=*/true};
}

}  // namespace opprof::cli
