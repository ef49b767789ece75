#include "opprof/ingest/json_diagnose.hpp"

#include <fmt/format.h>

namespace opprof::detail {
namespace {

constexpr int kMaxDepth = 1024;

class Checker {
 public:
  explicit Checker(std::string_view text) : t_(text) {}

  std::optional<JsonProblem> run() {
    skip_ws();
    if (!value(0)) return problem_;
    skip_ws();
    if (i_ < t_.size()) return JsonProblem{i_, fmt::format("unexpected {} after the end of the value", found())};
    return std::nullopt;
  }

 private:
  bool fail(std::size_t at, std::string message) {
    problem_ = JsonProblem{at, std::move(message)};
    return false;
  }
  std::string found() const {
    if (i_ >= t_.size()) return "the end of the text";
    const auto u = static_cast<unsigned char>(t_[i_]);
    if (u >= 0x20 && u < 0x7f) return fmt::format("'{}'", t_[i_]);
    return fmt::format("byte 0x{:02x}", u);
  }
  void skip_ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t')) ++i_;
  }
  bool at(char c) const { return i_ < t_.size() && t_[i_] == c; }
  static bool digit(char c) { return c >= '0' && c <= '9'; }

  bool value(int depth) {
    if (depth > kMaxDepth) return fail(i_, "nesting deeper than 1024 levels");
    if (i_ >= t_.size()) return fail(i_, "expected a value, found the end of the text");
    switch (t_[i_]) {
      case '{': return container(depth, /*is_object=*/true);
      case '[': return container(depth, /*is_object=*/false);
      case '"': return string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default:
        if (t_[i_] == '-' || digit(t_[i_])) return number();
        return fail(i_, fmt::format("expected a value, found {}", found()));
    }
  }

  // Steps over c when it is next.
  bool take(char c) {
    if (!at(c)) return false;
    ++i_;
    return true;
  }

  // An object or an array: members separated by commas up to the closing bracket; an object's members
  // are key: value.
  bool container(int depth, bool is_object) {
    const char close = is_object ? '}' : ']';
    ++i_;  // '{' or '['
    skip_ws();
    if (take(close)) return true;
    for (;;) {
      if (is_object && !key()) return false;
      if (!value(depth + 1)) return false;
      skip_ws();
      if (take(close)) return true;
      if (!take(','))
        return fail(i_, fmt::format("expected ',' or '{}' after a value in {}, found {}", close,
                                    is_object ? "an object" : "an array", found()));
      skip_ws();
    }
  }

  // An object member's key and its colon, and the space after it.
  bool key() {
    if (!at('"')) return fail(i_, fmt::format("expected a key string, found {}", found()));
    if (!string()) return false;
    skip_ws();
    if (!take(':')) return fail(i_, fmt::format("expected ':' after a key, found {}", found()));
    skip_ws();
    return true;
  }

  bool string() {
    const std::size_t open = i_;
    ++i_;  // '"'
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '"') {
        ++i_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return fail(i_, fmt::format("raw control character (byte 0x{:02x}) in a string: it must be escaped",
                                    static_cast<unsigned>(c)));
      if (c == '\\') {
        if (i_ + 1 >= t_.size()) break;
        const char e = t_[i_ + 1];
        if (e == 'u') {
          for (std::size_t k = 2; k < 6; ++k) {
            const char h = i_ + k < t_.size() ? t_[i_ + k] : '\0';
            if (!digit(h) && !(h >= 'a' && h <= 'f') && !(h >= 'A' && h <= 'F'))
              return fail(i_, "invalid \\u escape in a string: expected four hex digits");
          }
          i_ += 6;
          continue;
        }
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't')
          return fail(i_, fmt::format("invalid escape '\\{}' in a string", e));
        i_ += 2;
        continue;
      }
      ++i_;
    }
    return fail(open, "unterminated string");
  }

  bool number() {
    const std::size_t start = i_;
    if (at('-')) ++i_;
    if (at('0')) {
      ++i_;
    } else if (i_ < t_.size() && digit(t_[i_])) {
      while (i_ < t_.size() && digit(t_[i_])) ++i_;
    } else {
      return fail(start, "malformed number: expected a digit");
    }
    if (at('.')) {
      ++i_;
      if (!(i_ < t_.size() && digit(t_[i_]))) return fail(start, "malformed number: expected a digit after '.'");
      while (i_ < t_.size() && digit(t_[i_])) ++i_;
    }
    if (at('e') || at('E')) {
      ++i_;
      if (at('+') || at('-')) ++i_;
      if (!(i_ < t_.size() && digit(t_[i_]))) return fail(start, "malformed number: expected an exponent");
      while (i_ < t_.size() && digit(t_[i_])) ++i_;
    }
    // What follows a number must end it; "12x" is one bad token, not a number and garbage.
    if (i_ < t_.size()) {
      const char c = t_[i_];
      if (c != ',' && c != '}' && c != ']' && c != ' ' && c != '\n' && c != '\r' && c != '\t')
        return fail(start, fmt::format("malformed number: unexpected {} in it", found()));
    }
    return true;
  }

  bool literal(std::string_view word) {
    if (t_.substr(i_, word.size()) != word) return fail(i_, fmt::format("expected a value, found {}", found()));
    i_ += word.size();
    return true;
  }

  std::string_view t_;
  std::size_t i_ = 0;
  JsonProblem problem_;
};

}  // namespace

std::optional<JsonProblem> find_json_problem(std::string_view text) { return Checker(text).run(); }

}  // namespace opprof::detail
