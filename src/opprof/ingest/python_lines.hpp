#pragma once
// Splits Python source that a program generated (Inductor's output_code.py, FX's print_readable output)
// into logical lines, the way Python's tokenizer does, so the Inductor reader can look at statements and
// comments without being fooled by what Python itself would not be fooled by:
//   - a statement continues over line breaks inside (), [] and {} and after a trailing backslash;
//   - string literals, triple-quoted ones too (Inductor embeds every Triton and C++ kernel's source in one),
//     can hold '#', '=', '(' and whole "def" lines that are not code;
//   - ';' separates statements on one line ("buf5 = buf4; del buf4  # reuse").
// This is not a Python parser: it knows tokens, not grammar, which is all the readers need.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace opprof {

struct PythonLine {
  enum class Kind : std::uint8_t {
    kStatement = 0,  // code, with comments removed
    kComment = 1,    // a line holding only a comment
  };
  Kind kind = Kind::kStatement;
  std::uint32_t line = 0;    // 1-based physical line where it starts
  std::uint32_t indent = 0;  // column of its first character (a tab advances to the next multiple of 8)
  // kStatement: the code with each string literal reduced to '' (so nothing inside a string can look like
  // code), line breaks inside brackets turned into spaces, and surrounding whitespace trimmed.
  // kComment: the text after '#', trimmed.
  std::string text;
};

// Never fails: an unterminated string or bracket ends at the end of the source, as far as it got.
std::vector<PythonLine> scan_python_lines(std::string_view source);

}  // namespace opprof
