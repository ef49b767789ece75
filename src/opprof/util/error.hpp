#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace opprof {

// Where in an input a problem was found. Line and column are 1-based; 0 means unknown.
struct InputPosition {
  std::uint64_t line = 0;
  std::uint64_t column = 0;
  std::uint64_t byte_offset = 0;
  bool known = false;
};

// A problem with a user's input (missing file, malformed JSON/CSV, wrong units, a capture from another
// window). what() is one line: "<file>:<line>:<col>: <message>" or "<file>: <message>", passed through
// printable() (file() and message() keep the raw text).
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string message, InputPosition pos = {});
  const std::string& file() const { return file_; }
  const std::string& message() const { return message_; }
  const InputPosition& position() const { return pos_; }

 private:
  std::string file_;
  std::string message_;
  InputPosition pos_;
};

// A problem with the profile database or another output.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What this machine lacks for the work, not what the user gave: no GPU, no ncu on the PATH, no permission to
// read the GPU's counters. The CLI exits 1 for it (2 is bad input or usage). what() is one line.
class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "<what>: <strerror(errno)>", for messages about files the system would not open.
std::string fmt_errno(const std::string& what);

// Text safe to print on a terminal in one line: control characters (newlines, escapes, DEL) and bytes that
// are not valid UTF-8 become \n, \t, \r or \xNN; valid UTF-8 is kept. Error messages quote input, and input
// can hold anything.
std::string printable(std::string_view text);

}  // namespace opprof
