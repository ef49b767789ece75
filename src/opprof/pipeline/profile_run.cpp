#include "opprof/pipeline/profile_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include "contract/opprof_contract.h"
#include "opprof/capture/clocks.hpp"
#include "opprof/capture/local_ports.hpp"
#include "opprof/capture/ncu_progress.hpp"
#include "opprof/capture/subprocess.hpp"
#include "opprof/ingest/inductor.hpp"
#include "opprof/job/processes.hpp"
#include "opprof/pipeline/attribute_job.hpp"
#include "opprof/report/json.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/atomic_file.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/interrupt.hpp"
#include "opprof/util/simdjson_dom.hpp"

namespace fs = std::filesystem;

namespace opprof {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The least time the attach of an early pass B is tried for after pass A (see run_counters_pass).
constexpr double kAttachWait_s = 10.0;

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

std::string get_or(const std::map<std::string, std::string>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? std::string() : it->second;
}

class Runner {
 public:
  Runner(const ProfileRequest& request, ProfileObserver* observer) : r_(request), observer_(observer) {}

  ProfileOutcome run() {
    check_profile_request(r_);
    const MetricSet metric_set = load_metric_set(r_.metrics);  // a bad --metrics fails before any GPU work
    env_ = probe_capture_environment(r_);
    plan_ = build_capture_plan(r_, env_);
    prepare_output_dir(plan_.output_dir);
    outcome_.output_dir = plan_.output_dir;
    for (const auto& note : plan_.notes) say(note);

    std::optional<TimelineCapture> timeline;
    if (!run_passes(metric_set, timeline)) return outcome_;
    if (!partial_.empty()) {
      meta_["partial"] = partial_;
      say("the profile is partial: " + partial_);
    }
    const auto attribute_start = Clock::now();
    if (plan_.per_process) {
      JobRequest job;
      job.dir = plan_.output_dir.string();
      job.trace_file = fs::path(plan_.trace).filename().string();
      job.request.output = plan_.database;
      job.request.metrics = r_.metrics;
      if (!ncu_csv_.empty()) job.request.ncu = ncu_csv_;
      job.counters_ranks = counters_ranks_;
      job.counters_ranks_planned = true;
      meta_["job.launcher"] = plan_.launcher.empty() ? "(the program)" : plan_.launcher;
      job.request.extra_metadata = meta_;
      attribute_job(job, observer_);
    } else {
      AttributeRequest attr = attribute_request();
      if (!ncu_csv_.empty()) attr.ncu = ncu_csv_;
      if (!ncu_csv_.empty() && dedup_active_) attr.dedup = dedup_request_;
      attr.extra_metadata = meta_;
      attribute_capture(std::move(*timeline), attr, observer_);
    }
    tell(progress::WallTime{pass_a_s_, pass_b_s_, read_s_ + since(attribute_start)});

    write_report_files(plan_.database, plan_.output_dir);
    outcome_.database = plan_.database;
    outcome_.report_text = render_terminal_report(ProfileReader(plan_.database));
    if (interrupted()) outcome_.exit_code = 128 + interrupt_signal();
    else outcome_.exit_code = partial_.empty() ? 0 : 1;
    return outcome_;
  }

 private:
  void tell(const ProfileEvent& e) {
    if (observer_) observer_->on_profile(e);
  }
  void say(std::string text) { tell(progress::Notice{std::move(text)}); }

  // What the capture's own files give attribution; the counters come after pass B.
  AttributeRequest attribute_request() const {
    AttributeRequest attr;
    attr.trace = plan_.trace;
    attr.output = plan_.database;
    attr.metrics = r_.metrics;
    if (fs::exists(plan_.inductor_dir)) attr.inductor = plan_.inductor_dir;
    return attr;
  }

  // Refuses an output path that cannot become the profile's directory before anything runs.
  static void prepare_output_dir(const fs::path& dir) {
    if (dir.empty()) throw InputError("-o", "the output directory is an empty path");
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
      throw InputError(dir.string(), "the output exists and is not a directory");
    fs::create_directories(dir, ec);
    if (ec) throw InputError(dir.string(), "cannot create the output directory: " + ec.message());
    check_output_file((dir / "profile.db").string());  // files can be created in it
  }

  // Pass A, the timeline read and pass B, with the clocks locked (restored when this returns, also after an
  // interrupt, which only stops the passes here: what they captured is attributed as a partial profile).
  // timeline: a single process's, read once (its kernels are what pass B expects, and it is what gets
  // attributed); a job's processes are read by attribute_job. False when there is nothing to attribute
  // (outcome_ says why).
  bool run_passes(const MetricSet& metric_set, std::optional<TimelineCapture>& timeline) {
    DeferInterrupts defer;
    std::optional<ClockLock> clocks;
    lock_clocks(clocks);
    outcome_.clocks_locked = clocks.has_value();
    start_counters_early();
    if (!run_timeline_pass()) return false;
    if (!partial_.empty() || interrupted()) early_b_.reset();  // no pass B follows: the held process goes
    if (plan_.per_process) {
      job_counters_pass(metric_set);
      return true;
    }
    const auto read_start = Clock::now();
    try {
      timeline = read_capture_timeline(plan_.trace, observer_);
    } catch (const InputError& e) {
      if (partial_.empty()) throw;
      // A trace cut by the interrupt or the failure may not parse (JSON); the tracer's log always does.
      say(fmt::format("{} and left no readable timeline ({}); what it wrote is in {}", partial_, e.what(),
                      plan_.output_dir.string()));
      outcome_.exit_code = interrupted() ? 128 + interrupt_signal() : 1;
      return false;
    }
    read_s_ = since(read_start);
    if (plan_.counters && partial_.empty()) {
      if (interrupted()) {
        partial_ = "interrupted before pass B: no counters";
      } else {
        const DedupPlan dedup = plan_dedup(*timeline, attribute_request());
        dedup_active_ = dedup.active();
        run_counters_pass(dedup.kernels_replayed, chip_for_capture(timeline->timeline.metadata),
                          get_or(capture_, "capture.window") == "whole_run", metric_set, &dedup);
      }
    }
    return true;
  }

  // A multi-process job: every process wrote its own capture folder. Pass B replays them all under one ncu
  // (its rows carry the process id), without dedup; attribute_job attributes them process by process.
  void job_counters_pass(const MetricSet& metric_set) {
    const std::string trace_file = fs::path(plan_.trace).filename().string();
    std::uint64_t expected = 0;
    std::string chip;
    bool whole_run = false;
    const auto read_start = Clock::now();
    std::vector<std::pair<std::int64_t, std::uint64_t>> kernels_by_rank;
    for (const JobProcess& p : find_job_processes(plan_.output_dir, trace_file)) {
      if (p.trace.empty()) continue;
      const auto record = read_capture_json(fs::path(p.trace).parent_path() / OPPROF_CAPTURE_RECORD_FILE);
      whole_run = whole_run || get_or(record, "capture.window") == "whole_run";
      if (meta_.count("capture.status") == 0)  // the first process's facts stand for the job's
        for (const auto& [k, v] : record) meta_[k] = v;
      try {
        const TimelineCapture t = read_capture_timeline(p.trace);
        kernels_by_rank.emplace_back(p.rank, t.kernel_count());
        if (chip.empty()) chip = chip_for_capture(t.timeline.metadata);
      } catch (const InputError& e) {
        say(fmt::format("{}: {}", p.label(), e.what()));  // attribute_job reports it with the others
      }
    }
    read_s_ = since(read_start);
    if (!whole_run) counters_ranks_ = plan_.counters_ranks;
    for (const auto& [rank, kernels] : kernels_by_rank)
      if (counters_ranks_.empty() || rank == kNoRank ||
          std::find(counters_ranks_.begin(), counters_ranks_.end(), rank) != counters_ranks_.end())
        expected += kernels;
    if (!plan_.counters || !partial_.empty()) return;
    if (interrupted()) partial_ = "interrupted before pass B: no counters";
    else run_counters_pass(expected, chip, whole_run, metric_set, nullptr);
  }

  void lock_clocks(std::optional<ClockLock>& clocks) {
    if (plan_.lock_clocks) {
      clocks.emplace(0);
      if (!clocks->locked()) throw InputError("--lock-clocks", clocks->error());
      say(fmt::format("SM clock locked at {} MHz (restored after pass B)", clocks->locked_mhz()));
      meta_["clocks_locked_mhz"] = std::to_string(clocks->locked_mhz());
    }
    meta_["clocks_locked"] = clocks ? "true" : "false";
    meta_["ncu.clock_control"] = plan_.clock_control;
    meta_["capture.backend"] = plan_.backend;
  }

  // Pass B's process under `ncu --mode launch`, started before pass A (counters_early): it runs until its first
  // CUDA call and waits there for run_counters_pass's attach.
  void start_counters_early() {
    if (!plan_.counters_early) return;
    early_port_ = free_local_port_pair();
    if (early_port_ == 0) {
      say("pass B starts after pass A: no free pair of loopback ports for ncu's launch and attach");
      return;
    }
    const CapturePass launch = counters_launch_pass(plan_, env_, early_port_);
    for (const auto& note : launch.notes) say(note);
    early_b_start_ = Clock::now();
    early_b_ = std::make_unique<BackgroundChild>(child(launch));
    meta_["ncu.pass_b_start"] = "early";
  }

  static ChildSpec child(const CapturePass& pass) {
    ChildSpec spec;
    spec.argv = pass.argv;
    spec.env = pass.env;
    spec.stdout_path = pass.stdout_path;
    spec.stderr_path = pass.stderr_path;
    return spec;
  }

  // Pass A. False when there is nothing to attribute (outcome_ says why). A workload that failed or was
  // interrupted inside the window leaves what it captured: attributed, marked partial.
  bool run_timeline_pass() {
    const CapturePass& a = plan_.timeline;
    for (const auto& note : a.notes) say(note);
    ChildSpec spec = child(a);
    spec.on_stderr_line = [&](std::string_view l) { tell(progress::PassOutput{a.kind, std::string(l)}); };
    tell(progress::PassStarted{a.kind, a.argv, 0, 0});
    const auto t0 = Clock::now();
    const ChildResult ra = run_child(spec);
    pass_a_s_ = since(t0);
    tell(progress::PassEnded{a.kind, pass_a_s_});
    capture_ = read_capture_json(plan_.capture_json);
    if (!interrupted() && get_or(capture_, "capture.window") == "never_opened")
      throw InputError(plan_.output_dir.string(), "the program never opened its capture window (torch.cuda.profiler.start() "
                                                  "was not called): nothing was measured");
    if (interrupted())
      partial_ = fmt::format("interrupted in pass A (signal {}, {})", interrupt_signal(), strsignal(interrupt_signal()));
    else if (!ra.ok())
      partial_ = fmt::format("the workload failed in pass A ({}); see {}", ra.describe(), a.stderr_path);
    const bool captured = plan_.per_process
                              ? !find_job_processes(plan_.output_dir, fs::path(plan_.trace).filename().string()).empty()
                              : fs::exists(plan_.trace);
    if (!partial_.empty() && !captured) {
      say(fmt::format("{}; it left no timeline (the files it wrote are in {})", partial_, plan_.output_dir.string()));
      outcome_.exit_code = interrupted() ? 128 + interrupt_signal() : 1;
      return false;
    }
    meta_["timing.pass_a_s"] = fmt::format("{:.2f}", pass_a_s_);
    for (const auto& [k, v] : capture_) meta_[k] = v;
    return true;
  }

  // The dedup plan from pass A's attributed timeline (attribute_capture attributes it again after pass B,
  // with the counters; attribution is a fraction of a second, the trace is read once). Writes the plan
  // file pass B's hooks read, and says what pass B will replay.
  DedupPlan plan_dedup(TimelineCapture& timeline, const AttributeRequest& attr) {
    DedupRequest request = plan_.dedup;
    Timeline& tl = timeline.timeline;
    if (request.mode == DedupMode::kOff) return plan_without_dedup(tl);
    if (request.mode == DedupMode::kLayers && !fs::exists(request.structure)) {
      say(fmt::format("dedup: pass A wrote no {} (a program, not a workload module, or a model without modules): "
                      "deduplicating by kernel signature instead (--dedup kernels)",
                      fs::path(request.structure).filename().string()));
      request.mode = DedupMode::kKernels;
      request.selection = DedupSelection::kPerLaunchConfigMangled;
    }
    std::optional<InductorArtifacts> inductor;
    if (!attr.inductor.empty()) inductor = read_inductor_artifacts(attr.inductor);
    const AttributionTable attribution = attribute_timeline(tl, inductor ? &*inductor : nullptr, attr.attribution);
    if (request.mode == DedupMode::kLayers) {
      const std::string runtime = read_structure_file(request.structure).runtime;
      const bool backward = std::find(attribution.phase.begin(), attribution.phase.end(), Phase::kBackward) !=
                            attribution.phase.end();
      request.selection = dedup_selection(request.mode, runtime, backward, r_.dedup_selection);
      if (r_.dedup_selection == "nvtx_modules" && request.selection != DedupSelection::kNvtxModules)
        say(fmt::format("dedup: --dedup-selection nvtx_modules needs module hooks that run per layer around every "
                        "kernel (an eager model, inference); {}: using per_launch_config_mangled",
                        backward ? "this window has backward kernels, launched outside the hooks' ranges"
                                 : "this structure's runtime is " + runtime));
    }
    DedupPlan dedup = build_dedup_plan(tl, attribution, request);
    request.launch_count = dedup.launch_count;  // what pass B runs with, stored with the profile
    dedup_request_ = request;
    if (dedup.selection == DedupSelection::kNvtxModules)
      write_file_atomically(plan_.dedup_plan_file, dedup_plan_json(dedup, r_.train));
    say(fmt::format("dedup {} ({}): {} classes, {} instances ({} replayed in full), {} of {} kernels to replay, {} "
                    "propagated{}{}",
                    to_string(dedup.mode), to_string(dedup.selection), dedup.classes.size(), dedup.instances,
                    dedup.instances_in_full, dedup.kernels_replayed, dedup.kernels, dedup.kernels_propagated,
                    dedup.verify > 0 ? fmt::format(", {} duplicates per class replayed to verify", dedup.verify) : "",
                    dedup.launch_count > 0 ? fmt::format(" (ncu --launch-count {})", dedup.launch_count) : ""));
    for (const std::string& note : dedup.notes) say("dedup: " + note);
    meta_["dedup.planned_at_capture"] = "true";
    return dedup;
  }

  // Pass B and the CSV export. An interrupt or an ncu failure leaves the profile without counters
  // (partial_ says why); ERR_NVGPUCTRPERM is an error with what to do. expected: the kernels ncu will
  // replay; chip: the GPU's ncu chip ("" unknown); whole_run: pass A recorded the whole run; dedup: the
  // plan of what to replay (null: everything).
  void run_counters_pass(std::uint64_t expected, const std::string& chip, bool whole_run, const MetricSet& metric_set,
                         const DedupPlan* dedup) {
    const std::vector<std::string> names = metric_set.for_chip(chip.empty() ? "*" : chip).names();
    const CapturePass b = counters_pass(plan_, env_, names, whole_run, dedup);
    // A failed early start's logs are kept beside those of the pass B that follows.
    auto keep_early_log = [&](const std::string& log, const char* kept_name) {
      const std::string kept = (plan_.output_dir / kept_name).string();
      std::error_code ec;
      fs::rename(log, kept, ec);
      return ec ? log : kept;
    };
    auto say_early_ended = [&](const ChildResult& gone) {
      say(fmt::format("pass B's early process ended before the attach ({}; see {}): starting pass B again", gone.describe(),
                      keep_early_log(b.stderr_path, "pass_b_early.log")));
    };
    if (early_b_ && early_b_->ended()) {
      say_early_ended(early_b_->wait());
      early_b_.reset();
    }
    if (!early_b_) meta_["ncu.pass_b_start"] = "after";
    for (const auto& note : b.notes) say(note);
    say(fmt::format("pass B: {} kernels to replay with {} metrics; ncu says how many replay passes that takes per "
                    "kernel when it has replayed the first (it cannot be asked beforehand)",
                    expected, names.size()));
    NcuProgress ncu(expected);
    const auto t1 = Clock::now();
    bool passes_told = false;
    auto on_line = [&](std::string_view l) {
      if (!ncu.feed(l)) return;
      if (!passes_told && ncu.passes() > 0) {
        passes_told = true;
        say(fmt::format("ncu: {} replay passes per kernel (the first kernel's)", ncu.passes()));
        meta_["ncu.passes_first_kernel"] = std::to_string(ncu.passes());
      }
      tell(progress::NcuStatus{ncu.profiled(), expected, since(t1), ncu.status(since(t1))});
    };
    ChildResult rb;
    if (early_b_) {
      meta_["timing.pass_b_early_s"] = fmt::format("{:.2f}", since(early_b_start_));
      const CapturePass attach = counters_attach_pass(plan_, names, whole_run, dedup, early_port_);
      // The launched process listens for the attach only once it reaches its first CUDA call, and its start-up
      // under ncu can take longer than all of pass A (whose runner skips the exit's garbage collection). The
      // attach is tried again while the process lives, for half as long as pass A took (at least
      // kAttachWait_s); then pass B starts after pass A.
      const double wait_s = std::max(kAttachWait_s, pass_a_s_ / 2);
      const auto first_attempt = Clock::now();
      bool found = false;
      int attempts = 0;
      ChildResult attached;
      for (;;) {
        bool connected = false;
        ChildSpec spec = child(attach);
        spec.on_stdout_line = spec.on_stderr_line = [&](std::string_view l) {
          connected = connected || l.find("==PROF== Connected to process") != std::string_view::npos;
          on_line(l);
        };
        if (attempts == 0) tell(progress::PassStarted{attach.kind, attach.argv, names.size(), expected});
        attached = run_child(spec);
        ++attempts;
        found = connected || ncu.profiled() > 0;
        if (found || interrupted() || early_b_->ended() || since(first_attempt) >= wait_s) break;
        if (attempts == 1)
          say(fmt::format("pass B's process (started {:.1f} s ago) is not yet waiting at its first CUDA call: trying the "
                          "attach again for up to {:.0f} s",
                          since(early_b_start_), wait_s));
        for (int i = 0; i < 5 && !interrupted(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      meta_["ncu.attach_attempts"] = std::to_string(attempts);
      const bool ended_unattached = !found && early_b_->ended();
      // An attach that found nothing leaves the process waiting: it goes, and pass B starts again.
      const ChildResult launched = found ? early_b_->wait() : early_b_->kill();
      early_b_.reset();
      if (!found && !interrupted()) {
        if (ended_unattached) {
          say_early_ended(launched);
        } else {
          keep_early_log(b.stderr_path, "pass_b_early.log");
          say(fmt::format("ncu's attach found no process on port {} in {} attempts over {:.1f} s ({}; see {}): starting "
                          "pass B again",
                          early_port_, attempts, since(first_attempt), attached.describe(),
                          keep_early_log(attach.stdout_path, "ncu_attach.log")));
        }
        meta_["ncu.pass_b_start"] = "after (the attach failed)";
      } else {
        rb = attached.ok() ? launched : attached;
        pass_b_s_ = since(t1);
      }
    }
    if (!pass_b_s_) {
      ChildSpec spec = child(b);
      spec.on_stdout_line = on_line;
      spec.on_stderr_line = on_line;
      tell(progress::PassStarted{b.kind, b.argv, names.size(), expected});
      rb = run_child(spec);
      pass_b_s_ = since(t1);
    }
    tell(progress::PassEnded{b.kind, *pass_b_s_});
    meta_["timing.pass_b_s"] = fmt::format("{:.2f}", *pass_b_s_);
    if (interrupted()) {
      partial_ = fmt::format("interrupted in pass B (signal {}, {}): no counters", interrupt_signal(),
                             strsignal(interrupt_signal()));
      return;
    }
    if (ncu.permission_denied())
      throw EnvironmentError(printable(plan_.ncu) +
                             ": ERR_NVGPUCTRPERM: this user may not read the GPU's performance counters. Run as root, "
                             "or have the admin set NVreg_RestrictProfilingToAdminUsers=0 (see NVIDIA's "
                             "ERR_NVGPUCTRPERM page); --skip-ncu profiles without counters");
    if (!rb.ok() && ncu.profiled() == 0) {
      partial_ = fmt::format("ncu failed in pass B ({}{}); see {}: no counters", rb.describe(),
                             ncu.first_error().empty() ? "" : ": " + ncu.first_error(), b.stderr_path);
      return;
    }
    if (ncu.nothing_profiled() || ncu.profiled() == 0)
      say("warning: ncu profiled no kernel (did the window open in pass B?); attributing without counters");
    else if (!rb.ok())
      say(fmt::format("warning: ncu ended with {} ({}); using the rows it wrote", rb.describe(), ncu.first_error()));
    if (ncu.profiled() > 0 && fs::exists(b.produces)) {
      const CapturePass e = csv_export_pass(plan_);
      ChildSpec export_spec = child(e);
      export_spec.on_stderr_line = [&](std::string_view l) { tell(progress::PassOutput{e.kind, std::string(l)}); };
      const ChildResult re = run_child(export_spec);
      if (interrupted()) {
        partial_ = "interrupted in the export of ncu's report: no counters";
        return;
      }
      if (!re.ok())
        throw InputError(b.produces, "ncu --import --csv failed (" + re.describe() +
                                         "); the report file is kept for inspection");
      ncu_csv_ = e.produces;
    }
  }

  const ProfileRequest& r_;
  ProfileObserver* observer_;
  CaptureEnvironment env_;
  CapturePlan plan_;
  ProfileOutcome outcome_;
  std::map<std::string, std::string> meta_;
  std::map<std::string, std::string> capture_;  // capture.json, flattened
  std::string partial_;  // why the profile is partial (meta key "partial"); "" for a complete one
  double pass_a_s_ = 0;
  double read_s_ = 0;
  std::optional<double> pass_b_s_;
  std::unique_ptr<BackgroundChild> early_b_;  // pass B's process held by ncu --mode launch, until the attach
  int early_port_ = 0;
  Clock::time_point early_b_start_;
  std::string ncu_csv_;
  DedupRequest dedup_request_;  // the dedup pass B was run with (layers may have fallen back to kernels)
  std::vector<std::int64_t> counters_ranks_;  // a job's pass B replayed these ranks only (empty: all)
  bool dedup_active_ = false;   // pass B replayed a deduplicated set: attribution propagates the counters
};

}  // namespace

ProfileOutcome run_profile(const ProfileRequest& request, ProfileObserver* observer) {
  return Runner(request, observer).run();
}

void write_report_files(const std::string& database, const fs::path& dir) {
  ProfileReader profile(database);
  write_file_atomically((dir / "report.txt").string(), render_terminal_report(profile));
  write_file_atomically((dir / "report.json").string(), render_json_report(profile));
}

}  // namespace opprof
