#pragma once
// GPU clock control for users allowed to lock clocks: kernel durations vary with boost clocks, and a
// locked SM clock makes operator-level comparisons between two profiles meaningful.
#include <string>

namespace opprof {

// Locks the SM clock of one GPU to its base (default applications) clock with nvidia-smi and restores
// it when destroyed, including after the workload was interrupted with Ctrl-C (run_child lets the
// parent outlive the signal so this destructor runs). Needs root or the admin's permission.
class ClockLock {
 public:
  explicit ClockLock(int gpu);
  ~ClockLock();
  ClockLock(const ClockLock&) = delete;
  ClockLock& operator=(const ClockLock&) = delete;

  bool locked() const { return locked_; }
  int locked_mhz() const { return mhz_; }
  const std::string& error() const { return error_; }  // why it could not lock

 private:
  int gpu_;
  bool locked_ = false;
  int mhz_ = 0;
  std::string error_;
};

}  // namespace opprof
