#include "opprof/capture/ncu_progress.hpp"

#include <fmt/format.h>

#include "opprof/util/text.hpp"

namespace opprof {
namespace {
std::string clock_text(double s) {
  auto total = static_cast<long long>(s + 0.5);
  return fmt::format("{}:{:02}", total / 60, total % 60);
}
}  // namespace

bool NcuProgress::feed(std::string_view line) {
  line = trim(line);
  if (starts_with(line, "==PROF== Profiling ")) {
    ++profiled_;
    // "==PROF== Profiling "name" - 0: 0%....50%....100% - 9 passes": ncu prints the count when the kernel
    // is done (a line it may print without the count while replaying is counted the same).
    if (ends_with(line, " passes") || ends_with(line, " pass")) {
      const std::size_t dash = line.rfind(" - ");
      if (dash != std::string_view::npos) {
        std::uint32_t n = 0;
        for (char c : line.substr(dash + 3)) {
          if (c < '0' || c > '9') break;
          n = n * 10 + static_cast<std::uint32_t>(c - '0');
        }
        if (n > 0) passes_ = n;
      }
    }
    return true;
  }
  if (contains(line, "ERR_NVGPUCTRPERM")) permission_denied_ = true;
  if (contains(line, "No kernels were profiled")) nothing_profiled_ = true;
  if (starts_with(line, "==ERROR==") && first_error_.empty()) first_error_ = std::string(line);
  return false;
}

std::string NcuProgress::status(double elapsed_s) const {
  std::string s = expected_ ? fmt::format("{}/{} kernels", profiled_, expected_) : fmt::format("{} kernels", profiled_);
  s += fmt::format(", {} elapsed", clock_text(elapsed_s));
  if (profiled_ > 0 && expected_ > profiled_)
    s += fmt::format(", about {} left", clock_text(elapsed_s / double(profiled_) * double(expected_ - profiled_)));
  return s;
}

}  // namespace opprof
