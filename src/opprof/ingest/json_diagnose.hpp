#pragma once
// Precise diagnosis of malformed JSON, for error messages; every JSON reader (Kineto traces, Inductor's
// provenance and FX module maps) uses it. simdjson says that a document is malformed
// ("improper structure: missing or superfluous commas, braces, ...") but not always where; this strict
// recursive-descent check of the same text finds the first byte where the grammar breaks and says what
// was expected there. It runs only after a parse failed, on one event or document, so its speed does not matter.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace opprof::detail {

struct JsonProblem {
  std::size_t offset = 0;  // into the text
  std::string message;     // "expected ',' or '}' after a value in an object, found ':'"
};

// The first place where text stops being exactly one JSON value (surrounding whitespace allowed), or
// nullopt when it is one. Encoding (UTF-8) is not checked here.
std::optional<JsonProblem> find_json_problem(std::string_view text);

}  // namespace opprof::detail
