#pragma once
// Reads Nsight Compute's console messages while it replays: kernels profiled so far, and the errors a
// user must act on (counters not permitted, nothing profiled).
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace opprof {

class NcuProgress {
 public:
  explicit NcuProgress(std::uint64_t expected_kernels) : expected_(expected_kernels) {}

  // Feeds one line ncu printed (stdout or stderr). Returns true when the line changed the progress.
  bool feed(std::string_view line);

  std::uint64_t profiled() const { return profiled_; }
  // Replay passes of the latest kernel ncu finished ("... 100% - 9 passes"); 0 before the first.
  std::uint32_t passes() const { return passes_; }
  std::uint64_t expected() const { return expected_; }
  bool permission_denied() const { return permission_denied_; }  // ERR_NVGPUCTRPERM
  bool nothing_profiled() const { return nothing_profiled_; }    // "No kernels were profiled"
  const std::string& first_error() const { return first_error_; }  // first "==ERROR==" line
  // "57/157 kernels, 0:32 elapsed, about 0:56 left" (the estimate from the mean time per kernel so far).
  std::string status(double elapsed_s) const;

 private:
  std::uint64_t expected_;
  std::uint64_t profiled_ = 0;
  std::uint32_t passes_ = 0;
  bool permission_denied_ = false;
  bool nothing_profiled_ = false;
  std::string first_error_;
};

}  // namespace opprof
