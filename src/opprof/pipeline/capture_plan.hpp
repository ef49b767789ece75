#pragma once
// `opprof profile` as data: what the user asked for (ProfileRequest), what the machine has
// (CaptureEnvironment, probed once), and the passes that follow from both (CapturePlan), built by pure
// functions so that every pass's arguments and environment are testable without a GPU. The runner
// (profile_run.hpp) executes a plan.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "opprof/capture/subprocess.hpp"
#include "opprof/dedup/dedup_plan.hpp"

namespace opprof {

struct ProfileRequest {
  std::string workload;               // a module exposing get_model_and_input(); or else
  std::vector<std::string> command;   // a program: "python script.py args..." or "script.py args..."
  std::string compile = "eager";      // eager or inductor (workload modules)
  std::string compile_mode;           // torch.compile(mode=...); empty: torch's default
  int warmup = 3;
  int iters = 1;
  bool train = false;
  std::string output;                 // output directory; "" for opprof-<name>-<time>
  std::string metrics;                // metric-set file replacing the built-in set
  std::string clock_control = "none"; // ncu --clock-control: none or base
  bool lock_clocks = false;           // lock the SM clock to its base clock for both passes
  std::string ncu;                    // ncu's path; "" to look it up
  std::string python = "python3";
  bool skip_ncu = false;
  // Pass A's capture: tracer (libopprof_tracer.so), torch (torch.profiler), or auto: the tracer where it
  // was built, else torch.
  std::string backend = "auto";
  // Layer dedup (docs/dedup.md): off, layers or kernels; --dedup-verify K also replays K duplicates per
  // class in full and reports how far their counters are from the representative's.
  std::string dedup = "layers";
  int dedup_verify = 0;
  std::string dedup_selection = "auto";  // auto or a DedupSelection name but rank_windows (dedup_selection())
  // When pass B's process starts: early, with pass A, under `ncu --mode launch`, which holds it at its first
  // CUDA call until pass A is done (its imports and model construction overlap pass A; counters_early()),
  // after pass A, or auto: early for a workload module, eager or compiled (measured on the H200), else after.
  std::string pass_b_start = "auto";
  // The program starts the processes that run CUDA (a launcher): each process writes its own capture
  // (rank<R>/ or pid<P>/ in the output directory), and the job is attributed into one profile. Implied for
  // torchrun and python -m torch.distributed.run, whose processes also get opprof's capture runner.
  bool multi_process = false;
};

// Throws InputError for a request that cannot run (both or neither of workload and command, a missing
// file, a command that is not a Python script, bad counts).
void check_profile_request(const ProfileRequest& request);

// What the machine has, as far as the plan depends on it.
// Where an agent library was found for pass A ("" when not), and where the lookup looked.
struct LibraryLookup {
  std::string path;
  std::string looked_at;
};

struct CaptureEnvironment {
  ChildResult gpu_probe;      // `python -c` asking torch for a GPU: exit 0 with its name, 3 without one
  std::string gpu_name;       // the probe's answer
  std::string ncu;            // ncu's path; "" when not found or not wanted
  LibraryLookup tracer;       // looked up unless the backend is torch
  LibraryLookup observer;     // looked up where the tracer was found
  std::string python_source;  // opprof's python/ in a source tree (prepended to PYTHONPATH); "" in installs
  std::string pythonpath;     // the parent's PYTHONPATH
  std::string opprof_bin;     // this executable, for the capture's engine calls (OPPROF_BIN); "" unknown
  std::filesystem::path cwd;  // for a relative output directory
  std::string timestamp;      // "20250102-030405", for the default output directory
};

// What a Python process opprof starts needs of this machine, without probing it: opprof's python/ in a
// source tree, the parent's PYTHONPATH, this executable, the working directory (the rest is left empty).
CaptureEnvironment python_side_environment();

// Runs the GPU probe and looks up ncu and the libraries the request may need.
CaptureEnvironment probe_capture_environment(const ProfileRequest& request);

// The Python side's environment additions (PYTHONPATH in a source tree, unbuffered output).
std::map<std::string, std::string> python_env(const CaptureEnvironment& env);

enum class PassKind : std::uint8_t {
  kTimeline,   // pass A: the workload with the timeline backend
  kCounters,   // pass B: the same window under ncu
  kCsvExport,  // ncu --import: the report's raw page as CSV
};

struct CapturePass {
  PassKind kind = PassKind::kTimeline;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to the runner's environment
  std::string stdout_path, stderr_path;    // files the output is kept in ("" for none)
  std::string produces;                    // the artifact the pass writes
  std::vector<std::string> notes;          // said before it starts (which libraries it injects)
};

struct CapturePlan {
  std::filesystem::path output_dir;
  std::string backend;             // resolved: tracer or torch
  std::string launcher;            // torchrun or torch.distributed.run when the command starts one, else ""
  bool per_process = false;        // every process writes its own capture folder (a multi-process job)
  // A job with dedup: the ranks pass B replays (rank 0, the representative, then the --dedup-verify ranks);
  // the others run without ncu's window and take rank 0's counters (docs/dedup.md). Empty: every rank.
  std::vector<std::int64_t> counters_ranks;
  std::vector<std::string> notes;  // said at the start (how the backend was chosen)
  CapturePass timeline;
  bool counters = false;           // pass B and its export follow (not with --skip-ncu)
  std::string ncu;                 // ncu's path when counters
  std::string clock_control;
  bool lock_clocks = false;
  std::string trace;               // pass A's timeline file
  std::string capture_json;        // what the capture runner says about its window and clocks
  std::string inductor_dir;        // where pass A's Inductor debug files go
  std::string database;            // profile.db
  // The capture runner's arguments for pass B (those of pass A without the backend).
  std::vector<std::string> counters_runner_args;
  // Dedup as asked and as this capture kind can select it: the mechanism pass B uses (dedup_selection),
  // the structure file pass A writes, the plan file pass B's hooks read.
  DedupRequest dedup;
  std::string dedup_plan_file;
  // Pass B's process starts with pass A (ProfileRequest::pass_b_start, where counters_early() allows it), and
  // which of its processes ncu holds: all for an eager workload module (as measured), else application-only
  // (Inductor's compile workers, held too, keep the runner from exiting).
  bool counters_early = false;
  std::string counters_early_targets = "all";
};

// Which of ncu's selection mechanisms realizes a dedup plan (docs/dedup.md, measured on the H200). By default
// ncu's per-launch-config filter keyed by the mangled name (per_launch_config_mangled): it works in every
// capture kind (eager, compiled graphs, CUDA-graph replays, training steps) and also dedups the kernels outside
// the layers. On request, NVTX exclude ranges from module hooks (nvtx_modules), which replay exactly the plan's
// layers, where the hooks run per layer around every kernel (an eager model's inference: a structure whose
// runtime is eager_inputs, no backward kernels in the window; autograd launches backward kernels outside the
// hooks' ranges), else the default; or the filter keyed by the function name (per_launch_config: ncu's default
// key, which shares one launch's counters among a template's instantiations). requested is
// ProfileRequest::dedup_selection ("auto" or a selection's name).
DedupSelection dedup_selection(DedupMode mode, std::string_view structure_runtime, bool backward,
                               std::string_view requested = "auto");

// The plan for a checked request on a probed machine. Throws InputError where the machine cannot serve
// the request: no tracer library for --backend tracer, no ncu without --skip-ncu, no GPU, no torch.
CapturePlan build_capture_plan(const ProfileRequest& request, const CaptureEnvironment& env);

// Pass B: its metric names come from the GPU chip pass A's timeline names, and it records from the start
// when pass A's window spanned the whole run (a script that never opened one).
// With a dedup plan, pass B selects its replay set: ncu's filter arguments and, for NVTX selection, the
// plan file in OPPROF_DEDUP_PLAN (written by the runner, write_dedup_plan_file).
CapturePass counters_pass(const CapturePlan& plan, const CaptureEnvironment& env,
                          const std::vector<std::string>& metric_names, bool whole_run,
                          const DedupPlan* dedup = nullptr);
// Pass B's process can start with pass A, held by `ncu --mode launch` at its first CUDA call: ncu's profiling
// options, which depend on pass A (the chip's metrics, the window, the dedup selection), are given when
// `ncu --mode attach` resumes it. Not for a job's processes (one attach per process) nor for NVTX selection
// (pass B's environment names the plan file only pass A yields).
bool counters_early(const ProfileRequest& request, const CapturePlan& plan);
// Pass B started early: its processes (plan.counters_early_targets) under `ncu --mode launch` on port and the
// next one (ncu's attach finds it there and nowhere else), with torch.cuda.is_available() asking NVML, not the
// CUDA driver, so that the process runs on to the model's first CUDA call.
CapturePass counters_launch_pass(const CapturePlan& plan, const CaptureEnvironment& env, int port);
// Its attach, with the profiling options counters_pass would give (argv only; stdout_path ncu.log).
CapturePass counters_attach_pass(const CapturePlan& plan, const std::vector<std::string>& metric_names, bool whole_run,
                                 const DedupPlan* dedup, int port);
// ncu's arguments that select a plan's replay set (none without dedup).
std::vector<std::string> ncu_selection_args(const DedupPlan& plan);
// The JSON pass B's hooks read (python/opprof/dedup_select.py, format version 1).
std::string dedup_plan_json(const DedupPlan& plan, bool backward);
CapturePass csv_export_pass(const CapturePlan& plan);

}  // namespace opprof
