// `opprof profile`: capture (pass A), replay with ncu (pass B) and attribute, in one command on a GPU.
#include "cli/profile_command.hpp"

#include <fmt/format.h>

// GCC 12 reports a false -Wdangling-pointer inside simdjson's DOM parser once it is inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <simdjson.h>
#pragma GCC diagnostic pop

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "cli/attribute_command.hpp"
#include "cli/report_command.hpp"
#include "opprof/capture/agent_libraries.hpp"
#include "opprof/capture/clocks.hpp"
#include "opprof/capture/ncu_progress.hpp"
#include "opprof/capture/subprocess.hpp"
#include "opprof/ingest/timeline_source.hpp"
#include "opprof/metrics/metric_set.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace fs = std::filesystem;

namespace opprof::cli {
namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Where the Python side lives in a source tree (pip installs put it on sys.path anyway).
std::string python_source_dir() {
#ifdef OPPROF_SOURCE_DIR
  fs::path p = fs::path(OPPROF_SOURCE_DIR) / "python";
  if (fs::exists(p / "opprof" / "capture.py")) return p.string();
#endif
  return {};
}

std::map<std::string, std::string> python_env() {
  std::map<std::string, std::string> env;
  std::string dir = python_source_dir();
  if (!dir.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    env["PYTHONPATH"] = old && *old ? dir + ":" + old : dir;
  }
  env["PYTHONUNBUFFERED"] = "1";
  // The capture asks this engine (opprof.engine) for the metric set and the chip, whatever build it is.
  std::error_code ec;
  if (const fs::path self = fs::read_symlink("/proc/self/exe", ec); !ec) env["OPPROF_BIN"] = self.string();
  return env;
}

// capture.json as metadata: scalars under "capture.<key>", nested objects flattened with dots
// ("capture.sm_clock.before_warmup.mhz"); arrays are skipped.
void flatten_json(simdjson::dom::element value, const std::string& key, std::map<std::string, std::string>& out) {
  switch (value.type()) {
    case simdjson::dom::element_type::OBJECT:
    {
      simdjson::dom::object object = value.get_object().value();  // a named object: its iteration outlives no temporary
      for (auto [k, v] : object) flatten_json(v, key + "." + std::string(k), out);
      break;
    }
    case simdjson::dom::element_type::STRING: out[key] = std::string(value.get_string().value()); break;
    case simdjson::dom::element_type::INT64: out[key] = std::to_string(value.get_int64().value()); break;
    case simdjson::dom::element_type::UINT64: out[key] = std::to_string(value.get_uint64().value()); break;
    case simdjson::dom::element_type::DOUBLE: out[key] = fmt::format("{}", value.get_double().value()); break;
    case simdjson::dom::element_type::BOOL: out[key] = value.get_bool().value() ? "true" : "false"; break;
    default: break;
  }
}

std::map<std::string, std::string> read_capture_json(const fs::path& path) {
  std::map<std::string, std::string> out;
  if (!fs::exists(path)) return out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.load(path.string()).get(doc) != simdjson::SUCCESS) return out;
  flatten_json(doc, "capture", out);
  return out;
}

std::string get_or(const std::map<std::string, std::string>& m, const std::string& k, const std::string& dflt = "") {
  auto it = m.find(k);
  return it == m.end() ? dflt : it->second;
}

// The capture runner's arguments common to both passes.
std::vector<std::string> capture_args(const ProfileOptions& o, const std::string& pass, const fs::path& out) {
  std::vector<std::string> a = {o.python, "-m", "opprof.capture", "--pass", pass, "--out", out.string(),
                                "--warmup", std::to_string(o.warmup), "--iters", std::to_string(o.iters)};
  if (o.train) a.push_back("--train");
  // Only pass A captures a timeline; pass B (ncu) always runs without profiler or tracer in the process.
  if (pass == "timeline") a.insert(a.end(), {"--backend", o.backend});
  if (!o.workload.empty()) {
    a.insert(a.end(), {"--workload", o.workload, "--compile", o.compile});
    if (!o.compile_mode.empty()) a.insert(a.end(), {"--compile-mode", o.compile_mode});
  } else {
    a.push_back("--");
    // `opprof profile -- python script.py args`: the runner takes the script and its arguments.
    std::size_t first = 0;
    if (!o.command.empty() && contains(fs::path(o.command[0]).filename().string(), "python")) first = 1;
    a.insert(a.end(), o.command.begin() + static_cast<std::ptrdiff_t>(first), o.command.end());
  }
  return a;
}

std::string find_ncu(const std::string& given) {
  if (!given.empty()) return find_in_path(given);
  std::string p = find_in_path("ncu");
  if (!p.empty()) return p;
  for (const char* c : {"/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"})
    if (fs::exists(c)) return c;
  return {};
}

}  // namespace

void add_profile_command(CLI::App& app, ProfileOptions& o) {
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
  cmd->add_option("-o,--output", o.output, "Output directory (default: opprof-<name>-<time>)");
  cmd->add_option("--metrics", o.metrics, "Metric-set file replacing the built-in set");
  cmd->add_option("--clock-control", o.clock_control, "ncu's clock control during replay: none or base")
      ->check(CLI::IsMember({"none", "base"}))
      ->capture_default_str();
  cmd->add_flag("--lock-clocks", o.lock_clocks,
                "Lock the SM clock to its base clock with nvidia-smi for both passes (needs permission; restored on exit)");
  cmd->add_option("--ncu", o.ncu, "Path to ncu (default: PATH, then /usr/local/cuda/bin/ncu)");
  cmd->add_option("--python", o.python, "Python interpreter with torch")->capture_default_str();
  cmd->add_flag("--skip-ncu", o.skip_ncu, "Timeline and attribution only (no hardware counters)");
  cmd->add_flag("-q,--quiet", o.quiet, "Less progress output");
  cmd->add_option("--backend", o.backend,
                  "Pass A's timeline capture: tracer (libopprof_tracer.so through CUDA/NVTX injection), torch\n"
                  "(torch.profiler, Kineto JSON), or auto: the tracer where it was built, else torch. The tracer\n"
                  "gives the same attribution at less overhead and also reaches CUDA-graph replays (docs/tracer.md)")
      ->check(CLI::IsMember({"auto", "torch", "tracer"}))
      ->capture_default_str();
  cmd->footer(
      "The output directory holds profile.db, report.txt, report.json and the raw artifacts (trace, ncu CSV and log,\n"
      "Inductor debug files, capture.json). Exit status: 0 done, 2 bad input or environment, 1 failure.");
}

int run_profile(ProfileOptions o) {
  if (o.workload.empty() == o.command.empty())
    throw InputError("opprof profile", "give a workload module or a command after --, not both and not neither");
  if (!o.workload.empty() && !fs::exists(o.workload)) throw InputError(o.workload, "no such workload file");
  if (o.iters < 1 || o.warmup < 0) throw InputError("opprof profile", "--iters must be >= 1 and --warmup >= 0");
  if (!o.compile_mode.empty() && (o.workload.empty() || o.compile != "inductor"))
    throw InputError("--compile-mode", "applies to workload modules with --compile inductor");
  if (!o.command.empty()) {
    // Pass A runs inside the Python process (torch.profiler and opprof's hooks): the program must be a
    // Python script, given as "python script.py ..." or "script.py ...".
    const std::string first = fs::path(o.command[0]).filename().string();
    const bool python = contains(first, "python") && o.command.size() > 1;
    const std::string script = python ? o.command[1] : o.command[0];
    if (!ends_with(script, ".py"))
      throw InputError(script, "opprof profile runs Python programs (`-- python script.py ...`); this is not a .py "
                               "script");
    if (!fs::exists(script)) throw InputError(script, "no such script");
  }
  std::string name = !o.workload.empty() ? fs::path(o.workload).stem().string()
                                         : fs::path(o.command.size() > 1 ? o.command[1] : o.command[0]).stem().string();
  if (o.output.empty()) {
    std::time_t t = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&t));
    o.output = fmt::format("opprof-{}-{}", name, stamp);
  }
  fs::path out = fs::absolute(o.output);
  fs::create_directories(out);
  auto say = [&](const std::string& s) {
    if (!o.quiet) fmt::print(stderr, "opprof: {}\n", s);
  };
  // The tracer library, looked up once: `auto` picks the backend by it, `tracer` requires it.
  std::string tracer_lib, tracer_where;
  if (o.backend != "torch") {
    const AgentLocation tracer_loc = find_agent(Agent::kTracer);
    if (!tracer_loc.error.empty()) throw InputError("opprof profile", tracer_loc.error);
    tracer_lib = tracer_loc.path;
    tracer_where = tracer_loc.looked_at_text();
  }
  if (o.backend == "tracer" && tracer_lib.empty())
    throw InputError("--backend tracer", "libopprof_tracer.so not found (looked at " + tracer_where +
                                             "); build it (needs CUPTI) or set OPPROF_TRACER_LIB");
  if (o.backend == "auto") {
    o.backend = tracer_lib.empty() ? "torch" : "tracer";
    if (tracer_lib.empty())
      say("backend: torch.profiler (libopprof_tracer.so not found at " + tracer_where +
          "; build opprof where CUPTI is installed for the lighter tracer backend)");
  }
  MetricSet metric_set = load_metric_set(o.metrics);  // a bad --metrics fails before any GPU work

  std::string ncu;
  if (!o.skip_ncu) {
    ncu = find_ncu(o.ncu);
    if (ncu.empty())
      throw InputError(o.ncu.empty() ? "ncu" : o.ncu,
                       "Nsight Compute (ncu) not found: install it, pass --ncu PATH, or use --skip-ncu for a timeline-only profile");
  }

  // No GPU is the first thing users meet on the wrong machine: ask torch before starting anything long.
  {
    std::string answer;
    ChildSpec probe;
    probe.argv = {o.python, "-c",
                  "import torch,sys; ok=torch.cuda.is_available(); "
                  "print(ok and torch.cuda.get_device_name(0) or 'none'); sys.exit(0 if ok else 3)"};
    probe.env = python_env();
    probe.on_stdout_line = [&](std::string_view l) { answer = std::string(l); };
    probe.on_stderr_line = [](std::string_view) {};
    ChildResult r = run_child(probe);
    if (!r.started) throw InputError(o.python, r.error);
    if (r.exit_code == 3) throw InputError("opprof profile", "no CUDA GPU visible to PyTorch (torch.cuda.is_available() is False)");
    if (!r.ok()) throw InputError(o.python, "cannot import torch (" + r.describe() + ")");
    say("GPU: " + answer);
  }

  std::optional<ClockLock> clocks;
  std::map<std::string, std::string> meta;
  if (o.lock_clocks) {
    clocks.emplace(0);
    if (!clocks->locked()) throw InputError("--lock-clocks", clocks->error());
    say(fmt::format("SM clock locked at {} MHz (restored on exit)", clocks->locked_mhz()));
    meta["clocks_locked_mhz"] = std::to_string(clocks->locked_mhz());
  }
  meta["clocks_locked"] = clocks ? "true" : "false";
  meta["ncu.clock_control"] = o.clock_control;

  // Pass A: the timeline, from torch.profiler (trace.json) or from the tracer injected into the process
  // (trace.opprof; the window is cudaProfilerStart/Stop, which torch.cuda.profiler.start/stop call).
  const bool tracer = o.backend == "tracer";
  fs::path trace = out / (tracer ? "trace.opprof" : "trace.json");
  meta["capture.backend"] = o.backend;
  auto t0 = std::chrono::steady_clock::now();
  ChildSpec pass_a;
  pass_a.argv = capture_args(o, "timeline", out);
  pass_a.env = python_env();
  if (tracer) {
    pass_a.env["CUDA_INJECTION64_PATH"] = tracer_lib;
    pass_a.env["NVTX_INJECTION64_PATH"] = tracer_lib;
    pass_a.env["OPPROF_TRACE_FILE"] = trace.string();
    pass_a.env["OPPROF_TRACE_WINDOW"] = "1";
    say("tracer: " + tracer_lib);
    // Operator ranges: the observer library when built (for the torch it was built against; the capture
    // checks), else the capture falls back to emit_nvtx, which costs several times more per operator.
    const AgentLocation observer_loc = find_agent(Agent::kTorchObserver);
    if (!observer_loc.error.empty())
      throw InputError("opprof profile", observer_loc.error);
    const std::string& observer = observer_loc.path;
    const std::string where = observer_loc.looked_at_text();
    if (!observer.empty()) {
      pass_a.env["OPPROF_TORCH_OBSERVER_LIB"] = observer;
      say("operator ranges: " + observer);
    } else {
      say("operator ranges: emit_nvtx (libopprof_torch_observer.so not found at " + where +
          "; build opprof where python3 has torch, or set OPPROF_TORCH_OBSERVER_LIB)");
    }
  }
  pass_a.stderr_path = (out / "pass_a.log").string();
  pass_a.on_stderr_line = [&](std::string_view l) {
    if (!o.quiet) fmt::print(stderr, "  [pass A] {}\n", l);
  };
  say("pass A (timeline): " + join(pass_a.argv, " "));
  ChildResult ra = run_child(pass_a);
  double pass_a_s = since(t0);
  auto capture = read_capture_json(out / "capture.json");
  if (interrupted()) {
    say("interrupted during pass A; what was captured is in " + out.string());
    return 130;
  }
  if (get_or(capture, "capture.window") == "never_opened")
    throw InputError(out.string(), "the program never opened its capture window (torch.cuda.profiler.start() was not "
                                   "called): nothing was measured");
  if (!ra.ok()) {
    say(fmt::format("the workload failed in pass A ({}); see {}", ra.describe(), (out / "pass_a.log").string()));
    if (!fs::exists(trace)) return 1;
    say("attributing what was captured before it failed");
  }
  meta["timing.pass_a_s"] = fmt::format("{:.2f}", pass_a_s);
  for (const auto& [k, v] : capture) meta[k] = v;

  // Pass B: the same window under ncu.
  AttributeOptions attr;
  attr.trace = trace.string();
  attr.output = (out / "profile.db").string();
  attr.metrics = o.metrics;
  attr.quiet = o.quiet;
  if (fs::exists(out / "inductor")) attr.inductor = (out / "inductor").string();
  if (!o.skip_ncu && ra.ok()) {
    Timeline tl = read_timeline(trace.string());
    std::uint64_t expected = 0;
    for (auto kind : tl.kernels.kind) expected += kind == ActivityKind::kKernel;
    std::string chip = chip_for_capture(tl.metadata);
    std::vector<std::string> names = metric_set.for_chip(chip.empty() ? "*" : chip).names();
    bool whole_run = get_or(capture, "capture.window") == "whole_run";
    ChildSpec pass_b;
    // ncu writes a report file and prints one "==PROF== Profiling" line per kernel (the progress below);
    // the raw page is exported from the report afterwards, in base units.
    pass_b.argv = {ncu, "--export", (out / "ncu").string(), "--force-overwrite", "--clock-control", o.clock_control,
                   "--profile-from-start", whole_run ? "on" : "off", "--target-processes", "all",
                   "--metrics", join(names, ",")};
    auto tail = capture_args(o, "counters", out);
    pass_b.argv.insert(pass_b.argv.end(), tail.begin(), tail.end());
    pass_b.env = python_env();
    pass_b.stdout_path = (out / "ncu.log").string();
    pass_b.stderr_path = (out / "pass_b.log").string();
    NcuProgress progress(expected);
    auto t1 = std::chrono::steady_clock::now();
    auto last_print = t1;
    // On a terminal the status line rewrites itself twice a second; in a log, a line every 10 seconds.
    const bool tty = isatty(STDERR_FILENO) != 0;
    const auto every = tty ? std::chrono::milliseconds(500) : std::chrono::milliseconds(10000);
    auto on_line = [&](std::string_view l) {
      bool moved = progress.feed(l);
      auto now = std::chrono::steady_clock::now();
      if (moved && !o.quiet && (now - last_print > every || progress.profiled() == expected)) {
        if (tty)
          fmt::print(stderr, "\ropprof: pass B (ncu): {}   ", progress.status(since(t1)));
        else
          fmt::print(stderr, "opprof: pass B (ncu): {}\n", progress.status(since(t1)));
        last_print = now;
      }
    };
    pass_b.on_stdout_line = on_line;
    pass_b.on_stderr_line = on_line;
    say(fmt::format("pass B (ncu, {} metrics, {} kernels expected)", names.size(), expected));
    ChildResult rb = run_child(pass_b);
    if (!o.quiet && tty) fmt::print(stderr, "\n");
    double pass_b_s = since(t1);
    meta["timing.pass_b_s"] = fmt::format("{:.2f}", pass_b_s);
    if (interrupted()) {
      say("interrupted during pass B; the timeline of pass A is in " + out.string());
      return 130;
    }
    if (progress.permission_denied())
      throw InputError(ncu, "ERR_NVGPUCTRPERM: this user may not read the GPU's performance counters. Run as root, or "
                            "have the admin set NVreg_RestrictProfilingToAdminUsers=0 (see NVIDIA's ERR_NVGPUCTRPERM page); "
                            "--skip-ncu profiles without counters");
    if (progress.nothing_profiled() || progress.profiled() == 0)
      say("warning: ncu profiled no kernel (did the window open in pass B?); attributing without counters");
    else if (!rb.ok())
      say(fmt::format("warning: ncu ended with {} ({}); using the rows it wrote", rb.describe(), progress.first_error()));
    if (progress.profiled() > 0 && fs::exists(out / "ncu.ncu-rep")) {
      ChildSpec export_csv;
      export_csv.argv = {ncu, "--import", (out / "ncu.ncu-rep").string(), "--csv", "--page", "raw", "--print-units",
                         "base"};
      export_csv.stdout_path = (out / "ncu.csv").string();
      export_csv.on_stderr_line = [&](std::string_view l) { say(std::string(l)); };
      ChildResult re = run_child(export_csv);
      if (!re.ok())
        throw InputError((out / "ncu.ncu-rep").string(), "ncu --import --csv failed (" + re.describe() +
                                                              "); the report file is kept for inspection");
      attr.ncu = (out / "ncu.csv").string();
    }
  }

  auto t2 = std::chrono::steady_clock::now();
  int rc = run_attribute(attr, meta);
  double attribute_s = since(t2);
  say(fmt::format("wall time: pass A {:.1f} s, pass B {} s, attribution {:.1f} s", pass_a_s,
                  get_or(meta, "timing.pass_b_s", "-"), attribute_s));
  if (rc != 0) return rc;
  write_report_files(attr.output, out);
  fmt::print("{}", render_report_text(attr.output));
  if (!clocks) say("note: clocks were not locked; kernel durations follow the GPU's boost clock (see --lock-clocks)");
  say("profile written to " + out.string());
  return ra.ok() ? 0 : 1;
}

}  // namespace opprof::cli
