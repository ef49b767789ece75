#pragma once
// Prints the pipeline's progress events on stderr as `opprof attribute` and `opprof profile` always have,
// so that stdout stays clean for scripts; quiet silences them.
#include <chrono>

#include "opprof/pipeline/profile_run.hpp"

namespace opprof::cli {

class ProgressPrinter : public ProfileObserver {
 public:
  explicit ProgressPrinter(bool quiet);
  void on_attribute(const AttributeEvent& event) override;
  void on_profile(const ProfileEvent& event) override;

 private:
  void say(const std::string& line) const;
  void end_line();

  bool quiet_;
  bool tty_;
  bool partial_line_ = false;
  double next_pct_ = 25;  // a log gets a line per quarter of the trace read
  std::chrono::steady_clock::time_point last_ncu_print_;
};

}  // namespace opprof::cli
