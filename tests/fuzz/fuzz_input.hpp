#pragma once
// What every fuzz target shares: the readers take paths, so each input is written to a file in a
// directory of this process (under $TMPDIR, /dev/shm where it exists: no disk I/O per execution), and
// the one outcome a reader may have on bad input besides success is InputError. Anything else that
// escapes (bad_alloc from a size the input chose, a logic_error, an SQLite error passed through) is a
// finding: the exception propagates, std::terminate aborts and libFuzzer saves the input.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "opprof/util/error.hpp"

namespace opprof::fuzz {

inline const std::filesystem::path& scratch_dir() {
  // Never destroyed: the atexit handler below still uses it.
  static const std::filesystem::path* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::filesystem::path base = tmp && *tmp                             ? std::filesystem::path(tmp)
                                 : std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                             : std::filesystem::temp_directory_path();
    std::filesystem::path d = base / ("opprof-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return new std::filesystem::path(std::move(d));
  }();
  // Removed at exit; a crash leaves it behind, and a later run of the same pid reuses it.
  static const bool cleanup = std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(*dir, ec);
  }) == 0;
  (void)cleanup;
  return *dir;
}

// Writes the input to scratch_dir()/name and returns the path.
inline std::string write_input(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path p = scratch_dir() / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  f.close();
  if (!f) std::abort();  // the scratch directory is full: no finding, but no point going on
  return p.string();
}

// Runs a reader on one input: success and InputError are the expected outcomes.
template <class Fn>
void expect_input_error_at_most(Fn&& read) {
  try {
    read();
  } catch (const InputError& e) {
    // The message is one printable line whatever the input held (printable() escapes the rest).
    for (const char c : std::string_view(e.what()))
      if (c == '\n' || c == '\r' || c == '\x1b') std::abort();
  }
}

}  // namespace opprof::fuzz
