#include "opprof/pipeline/profile_run.hpp"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <map>

#include "contract/opprof_contract.h"
#include "opprof/capture/clocks.hpp"
#include "opprof/capture/ncu_progress.hpp"
#include "opprof/capture/subprocess.hpp"
#include "opprof/job/processes.hpp"
#include "opprof/pipeline/attribute_job.hpp"
#include "opprof/report/json.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/simdjson_dom.hpp"

namespace fs = std::filesystem;

namespace opprof {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw OutputError(fmt::format("{}: cannot write", path.string()));
}

class Runner {
 public:
  Runner(const ProfileRequest& request, ProfileObserver* observer) : r_(request), observer_(observer) {}

  ProfileOutcome run() {
    check_profile_request(r_);
    const MetricSet metric_set = load_metric_set(r_.metrics);  // a bad --metrics fails before any GPU work
    env_ = probe_capture_environment(r_);
    plan_ = build_capture_plan(r_, env_);
    fs::create_directories(plan_.output_dir);
    outcome_.output_dir = plan_.output_dir;
    for (const auto& note : plan_.notes) say(note);
    lock_clocks();

    if (!run_timeline_pass()) return outcome_;
    if (plan_.per_process) return run_job(metric_set);
    // The timeline is read once: its kernels are what pass B expects, and it is what gets attributed.
    const auto read_start = Clock::now();
    TimelineCapture timeline = read_capture_timeline(plan_.trace, observer_);
    const double read_s = since(read_start);

    AttributeRequest attr;
    attr.trace = plan_.trace;
    attr.output = plan_.database;
    attr.metrics = r_.metrics;
    if (fs::exists(plan_.inductor_dir)) attr.inductor = plan_.inductor_dir;
    if (plan_.counters && timeline_ok_) {
      if (!run_counters_pass(timeline.kernel_count(), chip_for_capture(timeline.timeline.metadata),
                             get_or(capture_, "capture.window") == "whole_run", metric_set))
        return outcome_;
      if (!ncu_csv_.empty()) attr.ncu = ncu_csv_;
    }
    attr.extra_metadata = meta_;
    const auto attribute_start = Clock::now();
    attribute_capture(std::move(timeline), attr, observer_);
    tell(progress::WallTime{pass_a_s_, pass_b_s_, read_s + since(attribute_start)});
    return finish();
  }

 private:
  ProfileOutcome finish() {
    write_report_files(plan_.database, plan_.output_dir);
    outcome_.database = plan_.database;
    outcome_.report_text = render_terminal_report(ProfileReader(plan_.database));
    outcome_.clocks_locked = clocks_.has_value();
    outcome_.exit_code = timeline_ok_ ? 0 : 1;
    return outcome_;
  }

  // A multi-process job: every process wrote its own capture folder. Pass B replays them all under one
  // ncu (its rows carry the process id), and the job is attributed process by process into one profile.
  ProfileOutcome run_job(const MetricSet& metric_set) {
    const std::string trace_file = fs::path(plan_.trace).filename().string();
    std::uint64_t expected = 0;
    std::string chip;
    bool whole_run = false;
    const auto read_start = Clock::now();
    for (const JobProcess& p : find_job_processes(plan_.output_dir, trace_file)) {
      if (p.trace.empty()) continue;
      const auto record = read_capture_json(fs::path(p.trace).parent_path() / OPPROF_CAPTURE_RECORD_FILE);
      whole_run = whole_run || get_or(record, "capture.window") == "whole_run";
      if (meta_.count("capture.status") == 0)  // the first process's facts stand for the job's
        for (const auto& [k, v] : record) meta_[k] = v;
      try {
        const TimelineCapture t = read_capture_timeline(p.trace);
        expected += t.kernel_count();
        if (chip.empty()) chip = chip_for_capture(t.timeline.metadata);
      } catch (const InputError& e) {
        say(fmt::format("{}: {}", p.label(), e.what()));  // attribute_job reports it with the others
      }
    }
    const double read_s = since(read_start);
    JobRequest job;
    job.dir = plan_.output_dir.string();
    job.trace_file = trace_file;
    job.request.output = plan_.database;
    job.request.metrics = r_.metrics;
    if (plan_.counters && timeline_ok_) {
      if (!run_counters_pass(expected, chip, whole_run, metric_set)) return outcome_;
      if (!ncu_csv_.empty()) job.request.ncu = ncu_csv_;
    }
    meta_["job.launcher"] = plan_.launcher.empty() ? "(the program)" : plan_.launcher;
    job.request.extra_metadata = meta_;
    const auto attribute_start = Clock::now();
    attribute_job(job, observer_);
    tell(progress::WallTime{pass_a_s_, pass_b_s_, read_s + since(attribute_start)});
    return finish();
  }

  void tell(const ProfileEvent& e) {
    if (observer_) observer_->on_profile(e);
  }
  void say(std::string text) { tell(progress::Notice{std::move(text)}); }

  ProfileOutcome interrupted_during(const std::string& what) {
    say("interrupted during " + what + " is in " + plan_.output_dir.string());
    outcome_.exit_code = 130;
    return outcome_;
  }

  void lock_clocks() {
    if (plan_.lock_clocks) {
      clocks_.emplace(0);
      if (!clocks_->locked()) throw InputError("--lock-clocks", clocks_->error());
      say(fmt::format("SM clock locked at {} MHz (restored on exit)", clocks_->locked_mhz()));
      meta_["clocks_locked_mhz"] = std::to_string(clocks_->locked_mhz());
    }
    meta_["clocks_locked"] = clocks_ ? "true" : "false";
    meta_["ncu.clock_control"] = plan_.clock_control;
    meta_["capture.backend"] = plan_.backend;
  }

  static ChildSpec child(const CapturePass& pass) {
    ChildSpec spec;
    spec.argv = pass.argv;
    spec.env = pass.env;
    spec.stdout_path = pass.stdout_path;
    spec.stderr_path = pass.stderr_path;
    return spec;
  }

  // Pass A. False when there is nothing to attribute (outcome_ says why).
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
    if (interrupted()) {
      interrupted_during("pass A; what was captured");
      return false;
    }
    if (get_or(capture_, "capture.window") == "never_opened")
      throw InputError(plan_.output_dir.string(), "the program never opened its capture window (torch.cuda.profiler.start() "
                                                  "was not called): nothing was measured");
    timeline_ok_ = ra.ok();
    if (!ra.ok()) {
      say(fmt::format("the workload failed in pass A ({}); see {}", ra.describe(), a.stderr_path));
      const bool captured = plan_.per_process
                                ? !find_job_processes(plan_.output_dir, fs::path(plan_.trace).filename().string()).empty()
                                : fs::exists(plan_.trace);
      if (!captured) {
        outcome_.exit_code = 1;
        return false;
      }
      say("attributing what was captured before it failed");
    }
    meta_["timing.pass_a_s"] = fmt::format("{:.2f}", pass_a_s_);
    for (const auto& [k, v] : capture_) meta_[k] = v;
    return true;
  }

  // Pass B and the CSV export. False when interrupted (outcome_ says so).
  // expected: pass A's kernels; chip: the GPU's ncu chip ("" unknown); whole_run: pass A recorded the whole run.
  bool run_counters_pass(std::uint64_t expected, const std::string& chip, bool whole_run, const MetricSet& metric_set) {
    const std::vector<std::string> names = metric_set.for_chip(chip.empty() ? "*" : chip).names();
    const CapturePass b = counters_pass(plan_, env_, names, whole_run);
    NcuProgress ncu(expected);
    const auto t1 = Clock::now();
    auto on_line = [&](std::string_view l) {
      if (ncu.feed(l)) tell(progress::NcuStatus{ncu.profiled(), expected, since(t1), ncu.status(since(t1))});
    };
    ChildSpec spec = child(b);
    spec.on_stdout_line = on_line;
    spec.on_stderr_line = on_line;
    tell(progress::PassStarted{b.kind, b.argv, names.size(), expected});
    const ChildResult rb = run_child(spec);
    pass_b_s_ = since(t1);
    tell(progress::PassEnded{b.kind, *pass_b_s_});
    meta_["timing.pass_b_s"] = fmt::format("{:.2f}", *pass_b_s_);
    if (interrupted()) {
      interrupted_during("pass B; the timeline of pass A");
      return false;
    }
    if (ncu.permission_denied())
      throw InputError(plan_.ncu, "ERR_NVGPUCTRPERM: this user may not read the GPU's performance counters. Run as root, "
                                  "or have the admin set NVreg_RestrictProfilingToAdminUsers=0 (see NVIDIA's "
                                  "ERR_NVGPUCTRPERM page); --skip-ncu profiles without counters");
    if (ncu.nothing_profiled() || ncu.profiled() == 0)
      say("warning: ncu profiled no kernel (did the window open in pass B?); attributing without counters");
    else if (!rb.ok())
      say(fmt::format("warning: ncu ended with {} ({}); using the rows it wrote", rb.describe(), ncu.first_error()));
    if (ncu.profiled() > 0 && fs::exists(b.produces)) {
      const CapturePass e = csv_export_pass(plan_);
      ChildSpec export_spec = child(e);
      export_spec.on_stderr_line = [&](std::string_view l) { tell(progress::PassOutput{e.kind, std::string(l)}); };
      const ChildResult re = run_child(export_spec);
      if (!re.ok())
        throw InputError(b.produces, "ncu --import --csv failed (" + re.describe() +
                                         "); the report file is kept for inspection");
      ncu_csv_ = e.produces;
    }
    return true;
  }

  const ProfileRequest& r_;
  ProfileObserver* observer_;
  CaptureEnvironment env_;
  CapturePlan plan_;
  ProfileOutcome outcome_;
  std::optional<ClockLock> clocks_;  // restored when the runner ends, also after Ctrl-C
  std::map<std::string, std::string> meta_;
  std::map<std::string, std::string> capture_;  // capture.json, flattened
  bool timeline_ok_ = false;
  double pass_a_s_ = 0;
  std::optional<double> pass_b_s_;
  std::string ncu_csv_;
};

}  // namespace

ProfileOutcome run_profile(const ProfileRequest& request, ProfileObserver* observer) {
  return Runner(request, observer).run();
}

void write_report_files(const std::string& database, const fs::path& dir) {
  ProfileReader profile(database);
  write_text(dir / "report.txt", render_terminal_report(profile));
  write_text(dir / "report.json", render_json_report(profile));
}

}  // namespace opprof
