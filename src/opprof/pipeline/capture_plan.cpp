#include "opprof/pipeline/capture_plan.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>

#include "contract/opprof_contract.h"
#include "opprof/capture/agent_libraries.hpp"
#include "opprof/capture/doctor.hpp"
#include "opprof/report/json_writer.hpp"
#include "opprof/pipeline/launcher.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace fs = std::filesystem;

namespace opprof {
namespace {

// `opprof profile -- python script.py args`: the runner takes the script and its arguments.
bool names_python(const std::vector<std::string>& command) {
  return !command.empty() && contains(fs::path(command[0]).filename().string(), "python");
}

// An agent library for pass A through the one agent lookup (capture/agent_libraries); an environment
// variable that names no file is bad input.
LibraryLookup find_agent_library(Agent agent) {
  const AgentLocation location = find_agent(agent);
  if (!location.error.empty()) throw InputError(std::string(agent_info(agent).env_var), location.error);
  return {location.path, location.looked_at_text()};
}

// Where the Python side lives in a source tree (pip installs put it on sys.path anyway).
std::string python_source_dir() {
#ifdef OPPROF_SOURCE_DIR
  fs::path p = fs::path(OPPROF_SOURCE_DIR) / "python";
  if (fs::exists(p / "opprof" / "capture.py")) return p.string();
#endif
  return {};
}

// The capture runner's arguments; backend is pass A's ("" for pass B, which runs without profiler or
// tracer in the process). Under a launcher, the runner takes the script's place in the launcher's command.
std::vector<std::string> capture_args(const ProfileRequest& r, const std::string& pass, const fs::path& out,
                                      const std::string& backend) {
  std::vector<std::string> a = {"--pass", pass, "--out", out.string(), "--warmup", std::to_string(r.warmup),
                                "--iters", std::to_string(r.iters)};
  if (r.train) a.push_back("--train");
  if (!backend.empty()) a.insert(a.end(), {"--backend", backend});
  if (!r.workload.empty()) {
    a.insert(a.end(), {"--workload", r.workload, "--compile", r.compile});
    if (!r.compile_mode.empty()) a.insert(a.end(), {"--compile-mode", r.compile_mode});
  } else if (const auto launcher = parse_launcher(r.command)) {
    return launch_runner(*launcher, a);
  } else {
    a.push_back("--");
    a.insert(a.end(), r.command.begin() + (names_python(r.command) ? 1 : 0), r.command.end());
  }
  a.insert(a.begin(), {r.python, "-m", "opprof.capture"});
  return a;
}

// The script a command runs: the launcher's training script, else the command's Python script.
std::string script_of(const std::vector<std::string>& command) {
  if (const auto launcher = parse_launcher(command)) return launcher->program[0];
  return command[names_python(command) && command.size() > 1 ? 1 : 0];
}

fs::path output_dir(const ProfileRequest& r, const CaptureEnvironment& env) {
  if (!r.output.empty()) return env.cwd / r.output;
  const std::string name = fs::path(!r.workload.empty() ? r.workload : script_of(r.command)).stem().string();
  return env.cwd / fmt::format("opprof-{}-{}", name, env.timestamp);
}

// The backend pass A uses, with what the user should know about the choice.
std::string resolve_backend(const ProfileRequest& r, const CaptureEnvironment& env, std::vector<std::string>& notes) {
  if (r.backend == "tracer" && env.tracer.path.empty())
    throw InputError("--backend tracer", "libopprof_tracer.so not found (looked at " + env.tracer.looked_at +
                                             "); build it (needs CUPTI) or set OPPROF_TRACER_LIB");
  if (r.backend != "auto") return r.backend;
  const std::string backend = auto_capture_backend(!env.tracer.path.empty());
  if (backend == "torch")
    notes.push_back("backend: torch.profiler (libopprof_tracer.so not found at " + env.tracer.looked_at +
                    "; build opprof where CUPTI is installed for the lighter tracer backend)");
  return backend;
}

void require_gpu(const ProfileRequest& r, const CaptureEnvironment& env) {
  const ChildResult& p = env.gpu_probe;
  if (!p.started) throw InputError(r.python, p.error);
  if (p.exit_code == 3)
    throw EnvironmentError("opprof profile: no CUDA GPU visible to PyTorch (torch.cuda.is_available() is False)");
  if (!p.ok()) throw EnvironmentError(printable(r.python) + ": cannot import torch (" + p.describe() + ")");
}

}  // namespace

void check_profile_request(const ProfileRequest& r) {
  if (r.workload.empty() == r.command.empty())
    throw InputError("opprof profile", "give a workload module or a command after --, not both and not neither");
  if (!r.workload.empty() && !fs::exists(r.workload)) throw InputError(r.workload, "no such workload file");
  if (r.iters < 1 || r.warmup < 0) throw InputError("opprof profile", "--iters must be >= 1 and --warmup >= 0");
  if (!r.compile_mode.empty() && (r.workload.empty() || r.compile != "inductor"))
    throw InputError("--compile-mode", "applies to workload modules with --compile inductor");
  if (!enum_from_name<DedupMode>(kDedupModeNames, r.dedup))
    throw InputError("--dedup", "'" + r.dedup + "': give off, layers or kernels");
  if (r.dedup_verify < 0) throw InputError("--dedup-verify", "must be >= 0");
  if (r.dedup_verify > 0 && r.dedup == "off") throw InputError("--dedup-verify", "needs --dedup layers or kernels");
  const auto selection = enum_from_name<DedupSelection>(kDedupSelectionNames, r.dedup_selection);
  if (r.dedup_selection != "auto" && (!selection || *selection == DedupSelection::kRankWindows))
    throw InputError("--dedup-selection", "'" + r.dedup_selection +
                                              "': give auto, nvtx_modules, per_launch_config_mangled or "
                                              "per_launch_config");
  if (!r.command.empty()) {
    // Pass A runs inside the Python process (torch.profiler and opprof's hooks): the program must be a
    // Python script, given as "python script.py ..." or "script.py ...".
    const std::string script = script_of(r.command);
    if (!ends_with(script, ".py"))
      throw InputError(script, "opprof profile runs Python programs (`-- python script.py ...`); this is not a .py "
                               "script");
    if (!fs::exists(script)) throw InputError(script, "no such script");
  }
}

std::map<std::string, std::string> python_env(const CaptureEnvironment& env) {
  std::map<std::string, std::string> out;
  if (!env.python_source.empty())
    out["PYTHONPATH"] = env.pythonpath.empty() ? env.python_source : env.python_source + ":" + env.pythonpath;
  out["PYTHONUNBUFFERED"] = "1";
  if (!env.opprof_bin.empty()) out["OPPROF_BIN"] = env.opprof_bin;  // the engine the Python side asks
  return out;
}

CaptureEnvironment python_side_environment() {
  CaptureEnvironment env;
  env.python_source = python_source_dir();
  if (const char* old = std::getenv("PYTHONPATH")) env.pythonpath = old;
  std::error_code ec;
  if (const fs::path self = fs::read_symlink("/proc/self/exe", ec); !ec) env.opprof_bin = self.string();
  env.cwd = fs::current_path();
  return env;
}

CaptureEnvironment probe_capture_environment(const ProfileRequest& r) {
  CaptureEnvironment env = python_side_environment();
  std::time_t t = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&t));
  env.timestamp = stamp;
  if (r.backend != "torch") {
    env.tracer = find_agent_library(Agent::kTracer);
    if (!env.tracer.path.empty()) env.observer = find_agent_library(Agent::kTorchObserver);
  }
  if (!r.skip_ncu) env.ncu = find_ncu(r.ncu);
  // No GPU is the first thing users meet on the wrong machine: ask torch before starting anything long.
  ChildSpec probe;
  probe.argv = {r.python, "-c",
                "import torch,sys; ok=torch.cuda.is_available(); "
                "print(ok and torch.cuda.get_device_name(0) or 'none'); sys.exit(0 if ok else 3)"};
  probe.env = python_env(env);
  probe.on_stdout_line = [&](std::string_view l) { env.gpu_name = std::string(l); };
  probe.on_stderr_line = [](std::string_view) {};
  env.gpu_probe = run_child(probe);
  return env;
}

CapturePlan build_capture_plan(const ProfileRequest& r, const CaptureEnvironment& env) {
  CapturePlan plan;
  plan.output_dir = output_dir(r, env);
  plan.backend = resolve_backend(r, env, plan.notes);
  plan.counters = !r.skip_ncu;
  if (plan.counters && env.ncu.empty()) {
    constexpr const char* kWhatToDo = "install it, pass --ncu PATH, or use --skip-ncu for a timeline-only profile";
    // A --ncu that names nothing is the user's mistake; no ncu on the PATH is the machine's.
    if (!r.ncu.empty()) throw InputError(r.ncu, fmt::format("Nsight Compute (ncu) not found there: {}", kWhatToDo));
    throw EnvironmentError(fmt::format("ncu: Nsight Compute (ncu) not found on the PATH: {}", kWhatToDo));
  }
  require_gpu(r, env);
  plan.notes.push_back("GPU: " + env.gpu_name);
  if (!r.command.empty())
    if (const auto launcher = parse_launcher(r.command)) plan.launcher = launcher->name;
  plan.per_process = r.multi_process || !plan.launcher.empty();
  if (!plan.launcher.empty())
    plan.notes.push_back("launcher: " + plan.launcher + "; the capture runner runs in each of its processes, one capture "
                         "folder per rank");
  plan.ncu = env.ncu;
  plan.clock_control = r.clock_control;
  plan.lock_clocks = r.lock_clocks;

  const fs::path& out = plan.output_dir;
  const bool tracer = plan.backend == "tracer";
  plan.trace = (out / (tracer ? "trace.opprof" : "trace.json")).string();
  plan.capture_json = (out / "capture.json").string();
  plan.inductor_dir = (out / "inductor").string();
  plan.database = (out / "profile.db").string();

  // Pass A: the timeline, from torch.profiler (trace.json) or from the tracer injected into the process
  // (trace.opprof; the window is cudaProfilerStart/Stop, which torch.cuda.profiler.start/stop call).
  CapturePass& a = plan.timeline;
  a.kind = PassKind::kTimeline;
  a.argv = capture_args(r, "timeline", out, plan.backend);
  a.env = python_env(env);
  a.stderr_path = (out / "pass_a.log").string();
  if (plan.per_process) a.env[OPPROF_ENV_TRACE_PER_PROCESS] = "1";
  a.produces = plan.trace;
  if (tracer) {
    a.env["CUDA_INJECTION64_PATH"] = env.tracer.path;
    a.env["NVTX_INJECTION64_PATH"] = env.tracer.path;
    a.env["OPPROF_TRACE_FILE"] = plan.trace;
    a.env["OPPROF_TRACE_WINDOW"] = "1";
    // A collective's CPU work (gloo reduces on the CPU) launches nothing: a job's processes write every
    // operator range, so that the collectives' ranges reach the timeline.
    if (plan.per_process) a.env[OPPROF_ENV_TRACE_DEFER_OPERATORS] = "0";
    a.notes.push_back("tracer: " + env.tracer.path);
    // Operator ranges: the observer library when built (for the torch it was built against; the capture
    // checks), else the capture falls back to emit_nvtx, which costs several times more per operator.
    if (!env.observer.path.empty()) {
      a.env["OPPROF_TORCH_OBSERVER_LIB"] = env.observer.path;
      a.notes.push_back("operator ranges: " + env.observer.path);
    } else {
      a.notes.push_back("operator ranges: emit_nvtx (libopprof_torch_observer.so not found at " +
                        env.observer.looked_at + "; build opprof where python3 has torch, or set OPPROF_TORCH_OBSERVER_LIB)");
    }
  }
  plan.counters_runner_args = capture_args(r, "counters", out, "");

  plan.dedup.mode = *enum_from_name<DedupMode>(kDedupModeNames, r.dedup);
  plan.dedup.selection = DedupSelection::kPerLaunchConfigMangled;  // settled after pass A (dedup_selection)
  plan.dedup.verify = r.dedup_verify;
  plan.dedup.structure = (out / OPPROF_STRUCTURE_FILE).string();
  plan.dedup_plan_file = (out / OPPROF_DEDUP_PLAN_FILE).string();
  if (plan.per_process && plan.dedup.mode != DedupMode::kOff)
    for (std::int64_t rank = 0; rank <= r.dedup_verify; ++rank) plan.counters_ranks.push_back(rank);
  plan.counters_early = counters_early(r, plan);
  // `ncu --mode launch` holds every CUDA process of the tree and the attach resumes one: Inductor's compile
  // workers, held for good, kept compiled GPT-2's runner from exiting (H200). So only the runner is held where
  // a model may compile (not yet measured on the GPU; auto starts those after pass A).
  if (r.workload.empty() || r.compile != "eager") plan.counters_early_targets = "application-only";
  return plan;
}

DedupSelection dedup_selection(DedupMode mode, std::string_view structure_runtime, bool backward,
                               std::string_view requested) {
  // Measured on the H200 (docs/dedup.md): in a training step the duplicates' backward kernels, launched
  // from autograd's thread, escape the NVTX ranges (604 of 813 kernels replayed where 164 were planned).
  const bool hooks_run = mode == DedupMode::kLayers && structure_runtime == "eager_inputs" && !backward;
  if (requested == "nvtx_modules" && hooks_run) return DedupSelection::kNvtxModules;
  if (requested == "per_launch_config") return DedupSelection::kPerLaunchConfig;
  return DedupSelection::kPerLaunchConfigMangled;
}

std::vector<std::string> ncu_selection_args(const DedupPlan& plan) {
  if (!plan.active()) return {};
  if (plan.selection == DedupSelection::kNvtxModules) {
    if (plan.skip_modules.empty()) return {};
    return {"--nvtx", "--nvtx-exclude", std::string(OPPROF_DEDUP_RANGE) + "/"};
  }
  // The plan's launch count covers the verify duplicates and the first launch of each work variant.
  const int launch_count = plan.launch_count > 0 ? plan.launch_count : 1 + std::max(plan.verify, 0);
  std::vector<std::string> args = {"--filter-mode", "per-launch-config", "--launch-count",
                                   std::to_string(launch_count)};
  if (plan.selection == DedupSelection::kPerLaunchConfigMangled)
    args.insert(args.end(), {"--kernel-name-base", "mangled"});
  return args;
}

std::string dedup_plan_json(const DedupPlan& plan, bool backward) {
  std::string modules;
  for (const std::string& m : plan.skip_modules) modules += (modules.empty() ? "" : ", ") + json_quote(m);
  return fmt::format("{{\"format\": \"opprof-dedup-plan\", \"version\": 1, \"mechanism\": \"{}\", \"range\": {}, "
                     "\"backward\": {}, \"skip_modules\": [{}]}}\n",
                     to_string(plan.selection), json_quote(OPPROF_DEDUP_RANGE), backward ? "true" : "false", modules);
}

namespace {

// ncu's profiling and output options of pass B (given at launch, or at the attach of an early start).
// ncu writes a report file and prints one "==PROF== Profiling" line per kernel (the runner's progress);
// the raw page is exported from the report afterwards, in base units.
std::vector<std::string> ncu_profile_options(const CapturePlan& plan, const std::vector<std::string>& metric_names,
                                             bool whole_run, const DedupPlan* dedup) {
  std::vector<std::string> o = {"--export", (plan.output_dir / "ncu").string(), "--force-overwrite", "--clock-control",
                                plan.clock_control, "--profile-from-start", whole_run ? "on" : "off", "--metrics",
                                join(metric_names, ",")};
  if (dedup) {
    const std::vector<std::string> select = ncu_selection_args(*dedup);
    o.insert(o.end(), select.begin(), select.end());
  }
  return o;
}

}  // namespace

bool counters_early(const ProfileRequest& request, const CapturePlan& plan) {
  // auto: early for a workload module, eager or compiled (measured on the H200, docs/dedup.md §5); a program
  // may start processes of its own that ncu would hold at their first CUDA call, so it starts after pass A.
  const bool workload_module = !request.workload.empty();
  const bool wanted = request.pass_b_start == "early" || (request.pass_b_start == "auto" && workload_module);
  return wanted && plan.counters && !plan.per_process && request.dedup_selection != "nvtx_modules";
}

CapturePass counters_launch_pass(const CapturePlan& plan, const CaptureEnvironment& env, int port) {
  CapturePass b = counters_pass(plan, env, {}, false, nullptr);
  b.argv = {plan.ncu, "--mode", "launch", "--port", std::to_string(port), "--max-connections", "2",
            "--target-processes", plan.counters_early_targets};
  b.argv.insert(b.argv.end(), plan.counters_runner_args.begin(), plan.counters_runner_args.end());
  b.env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1";
  b.stdout_path = (plan.output_dir / "ncu_launch.log").string();  // ncu's own lines; the runner's are pass_b.log
  b.notes = {fmt::format("pass B starts now, beside pass A: its process waits under ncu --mode launch (port {}) at its "
                         "first CUDA call until pass A is done (--pass-b-start after: only then)",
                         port)};
  return b;
}

CapturePass counters_attach_pass(const CapturePlan& plan, const std::vector<std::string>& metric_names, bool whole_run,
                                 const DedupPlan* dedup, int port) {
  CapturePass a;
  a.kind = PassKind::kCounters;
  // Two ports, as the launch listens on: ncu's attach scans [port, port + connections) and finds nothing when
  // that is one port (ncu 2025.3, measured on the H200).
  a.argv = {plan.ncu, "--mode", "attach", "--hostname", "127.0.0.1", "--port", std::to_string(port),
            "--max-connections", "2"};
  const std::vector<std::string> o = ncu_profile_options(plan, metric_names, whole_run, dedup);
  a.argv.insert(a.argv.end(), o.begin(), o.end());
  a.stdout_path = (plan.output_dir / "ncu.log").string();
  a.stderr_path = (plan.output_dir / "ncu_attach_stderr.log").string();
  a.produces = (plan.output_dir / "ncu.ncu-rep").string();
  return a;
}

CapturePass counters_pass(const CapturePlan& plan, const CaptureEnvironment& env,
                          const std::vector<std::string>& metric_names, bool whole_run, const DedupPlan* dedup) {
  const fs::path& out = plan.output_dir;
  CapturePass b;
  b.kind = PassKind::kCounters;
  b.argv = {plan.ncu, "--target-processes", "all"};
  const std::vector<std::string> o = ncu_profile_options(plan, metric_names, whole_run, dedup);
  b.argv.insert(b.argv.end(), o.begin(), o.end());
  b.argv.insert(b.argv.end(), plan.counters_runner_args.begin(), plan.counters_runner_args.end());
  b.env = python_env(env);
  if (dedup && dedup->selection == DedupSelection::kNvtxModules && !dedup->skip_modules.empty()) {
    b.env[OPPROF_ENV_DEDUP_PLAN] = plan.dedup_plan_file;
    b.notes.push_back(fmt::format("dedup: pass B's module hooks mark {} duplicate instances {} (ncu --nvtx-exclude)",
                                  dedup->skip_modules.size(), OPPROF_DEDUP_RANGE));
  }
  if (plan.per_process) b.env[OPPROF_ENV_TRACE_PER_PROCESS] = "1";  // each rank's runner writes into its folder
  // A window over the whole run is open from the start in every process: no rank can be left out then.
  if (!plan.counters_ranks.empty() && !whole_run) {
    std::string ranks;
    for (std::int64_t rank : plan.counters_ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
    b.env[OPPROF_ENV_COUNTERS_RANKS] = ranks;
    b.notes.push_back(fmt::format("dedup across ranks: pass B opens ncu's window in rank{} {} only; the other ranks take "
                                  "rank 0's counters kernel by kernel (--dedup off replays every rank)",
                                  plan.counters_ranks.size() > 1 ? "s" : "", ranks));
  }
  b.stdout_path = (out / "ncu.log").string();
  b.stderr_path = (out / "pass_b.log").string();
  b.produces = (out / "ncu.ncu-rep").string();
  return b;
}

CapturePass csv_export_pass(const CapturePlan& plan) {
  CapturePass e;
  e.kind = PassKind::kCsvExport;
  e.argv = {plan.ncu, "--import", (plan.output_dir / "ncu.ncu-rep").string(), "--csv", "--page", "raw",
            "--print-units", "base"};
  e.stdout_path = (plan.output_dir / "ncu.csv").string();
  e.produces = e.stdout_path;
  return e;
}

}  // namespace opprof
