#pragma once
// The output of `opprof diff`: text for a terminal (within a width) and JSON (docs/report_json.md).
#include <cstddef>
#include <string>

#include "opprof/report/profile_diff.hpp"

namespace opprof {

struct DiffTextOptions {
  std::size_t top = 15;     // rows per table; 0: all
  int depth = 3;            // module levels (0: all)
  std::size_t width = 100;  // columns every line fits in
  bool color = false;
};

std::string render_diff_text(const ProfileDiff& d, const DiffTextOptions& options = {});
// Every row of every table; format "opprof-diff", format_version 1.
std::string render_diff_json(const ProfileDiff& d);

}  // namespace opprof
