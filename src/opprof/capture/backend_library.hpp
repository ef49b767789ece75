#pragma once
// Where the libraries injected into pass A (the CUPTI+NVTX tracer, the torch observer) are.
#include <string>

namespace opprof {

struct LibraryLookup {
  std::string path;       // absolute; "" when not found
  std::string looked_at;  // the places tried, for the message when not found
};

// A library of the tracer backend: $<env_var>, else beside this executable in a build tree
// (<exe_dir>/<build_subdir>/) or an install (<exe_dir>/../lib/). Throws InputError when env_var names
// no file.
LibraryLookup find_backend_library(const char* env_var, const std::string& file, const std::string& build_subdir);

}  // namespace opprof
