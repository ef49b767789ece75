#include "opprof/capture/backend_library.hpp"

#include <cstdlib>
#include <filesystem>

#include "opprof/util/error.hpp"

namespace fs = std::filesystem;

namespace opprof {

LibraryLookup find_backend_library(const char* env_var, const std::string& file, const std::string& build_subdir) {
  if (const char* env = std::getenv(env_var); env != nullptr && *env != '\0') {
    if (!fs::exists(env)) throw InputError(env, std::string(env_var) + " names no file");
    return {fs::absolute(env).string(), {}};
  }
  LibraryLookup found;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    found.looked_at = "nothing: /proc/self/exe unreadable";
    return found;
  }
  const fs::path dir = exe.parent_path();
  for (const fs::path& p : {dir / build_subdir / file, dir / ".." / "lib" / file}) {
    if (fs::exists(p)) return {fs::canonical(p).string(), {}};
    found.looked_at += (found.looked_at.empty() ? "" : ", ") + p.lexically_normal().string();
  }
  return found;
}

}  // namespace opprof
