#pragma once
// The `opprof profile` runner: checks the request, probes the machine, builds the capture plan
// (capture_plan.hpp) and executes it with the mechanisms of capture/ (child processes, ncu progress, the
// clock lock), reads pass A's timeline once and hands it to attribute_capture.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "opprof/pipeline/attribute.hpp"
#include "opprof/pipeline/capture_plan.hpp"

namespace opprof {

namespace progress {
struct Notice {  // one line for the user: a choice made, a warning, where things are
  std::string text;
};
struct PassStarted {
  PassKind kind = PassKind::kTimeline;
  std::vector<std::string> argv;
  std::size_t metrics = 0;            // pass B: metrics collected
  std::uint64_t expected_kernels = 0; // pass B: kernels of pass A's timeline
};
struct PassOutput {  // a line the pass printed on stderr (pass A, the CSV export)
  PassKind kind = PassKind::kTimeline;
  std::string line;
};
struct NcuStatus {  // pass B moved on: another kernel profiled, or an error ncu printed
  std::uint64_t profiled = 0, expected = 0;
  double elapsed_s = 0;
  std::string status;  // "57/157 kernels, 0:32 elapsed, about 0:56 left"
};
struct PassEnded {
  PassKind kind = PassKind::kTimeline;
  double seconds = 0;
};
struct WallTime {
  double pass_a_s = 0;
  std::optional<double> pass_b_s;  // absent when pass B did not run
  double attribute_s = 0;          // reading pass A's timeline, attributing and writing
};
}  // namespace progress
using ProfileEvent = std::variant<progress::Notice, progress::PassStarted, progress::PassOutput, progress::NcuStatus,
                                  progress::PassEnded, progress::WallTime>;

// Sees the runner's events and, through ProgressObserver, those of the attribute pipeline.
class ProfileObserver : public ProgressObserver {
 public:
  virtual void on_profile(const ProfileEvent& event) = 0;
};

struct ProfileOutcome {
  // 0 done; 1 a partial profile (the workload or ncu failed: what was captured is attributed, meta key
  // "partial" says what is missing) or nothing to attribute; 128 + signal when SIGINT or SIGTERM
  // stopped a pass (130, 143), with what was captured attributed as a partial profile.
  int exit_code = 0;
  std::filesystem::path output_dir;
  std::string database;     // "" when nothing was attributed
  std::string report_text;  // the terminal report of the database
  bool clocks_locked = false;
};

// Throws InputError for a request or machine that cannot be served; observer may be null.
ProfileOutcome run_profile(const ProfileRequest& request, ProfileObserver* observer = nullptr);

// Writes report.txt and report.json of a profile database into dir.
void write_report_files(const std::string& database, const std::filesystem::path& dir);

}  // namespace opprof
