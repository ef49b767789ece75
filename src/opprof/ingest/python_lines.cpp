#include "opprof/ingest/python_lines.hpp"

#include <algorithm>

#include "opprof/util/text.hpp"

namespace opprof {
namespace {

// The characters a scanning loop must stop at; it copies or skips the runs between them in one step.
class CharClass {
 public:
  explicit constexpr CharClass(std::string_view members) {
    for (char c : members) member_[static_cast<unsigned char>(c)] = true;
  }
  // The first position at or after `pos` that holds a member, or src.size().
  std::size_t skip(std::string_view src, std::size_t pos) const {
    while (pos < src.size() && !member_[static_cast<unsigned char>(src[pos])]) ++pos;
    return pos;
  }

 private:
  bool member_[256] = {};
};

constexpr CharClass kInStatement{std::string_view("\n\r\\#'\"()[]{};")};
constexpr CharClass kInSingleQuotes{std::string_view("\n\\'")};
constexpr CharClass kInDoubleQuotes{std::string_view("\n\\\"")};

class Scanner {
 public:
  explicit Scanner(std::string_view src) : src_(src) {}

  std::vector<PythonLine> run() {
    while (pos_ < src_.size()) scan_physical_line_start();
    return std::move(out_);
  }

 private:
  bool at_end() const { return pos_ >= src_.size(); }
  char peek(std::size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }

  // Moves past the '\n' that ends the current physical line (or to the end of the source).
  void next_physical_line() {
    pos_ = std::min(src_.find('\n', pos_), src_.size());
    if (!at_end()) {
      ++pos_;
      ++line_;
    }
  }

  void scan_physical_line_start() {
    std::uint32_t indent = 0;
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\f')) {
      indent = peek() == '\t' ? (indent / 8 + 1) * 8 : indent + 1;
      ++pos_;
    }
    if (at_end()) return;
    if (peek() == '\n' || peek() == '\r') {  // blank line
      next_physical_line();
      return;
    }
    if (peek() == '#') {
      std::size_t begin = pos_ + 1;
      std::size_t end = src_.find('\n', begin);
      if (end == std::string_view::npos) end = src_.size();
      out_.push_back({PythonLine::Kind::kComment, line_, indent, std::string(trim(src_.substr(begin, end - begin)))});
      next_physical_line();
      return;
    }
    scan_statement(indent);
  }

  void emit_statement(std::string& code, std::uint32_t line, std::uint32_t indent) {
    std::string_view t = trim(code);
    if (!t.empty()) out_.push_back({PythonLine::Kind::kStatement, line, indent, std::string(t)});
    code.clear();
  }

  // Skips a string literal that starts at pos_ (at its quote; any prefix letters were already copied as
  // identifier characters, which is harmless). Backslash escapes the next character in every kind of
  // literal, raw ones too, as far as finding the closing quote is concerned.
  void skip_string() {
    const char quote = peek();
    const bool triple = peek(1) == quote && peek(2) == quote;
    const CharClass& special = quote == '"' ? kInDoubleQuotes : kInSingleQuotes;
    pos_ += triple ? 3 : 1;
    while (!at_end()) {
      pos_ = special.skip(src_, pos_);  // a kernel's source, inside a triple-quoted string, is most of the file
      if (at_end()) break;
      char c = src_[pos_];
      if (c == '\\') {
        if (peek(1) == '\r' && peek(2) == '\n') {
          ++line_;
          pos_ += 3;
          continue;
        }
        if (peek(1) == '\n') ++line_;
        pos_ += 2;
        continue;
      }
      if (c == '\n') {
        if (!triple) return;  // an unterminated one-line string ends with its line; the caller sees the '\n'
        ++line_;
        ++pos_;
        continue;
      }
      if (!triple || (peek(1) == quote && peek(2) == quote)) {  // c is the quote
        pos_ += triple ? 3 : 1;
        return;
      }
      ++pos_;
    }
    if (pos_ > src_.size()) pos_ = src_.size();
  }

  void scan_statement(std::uint32_t indent) {
    std::string code;
    std::uint32_t segment_line = line_;
    int depth = 0;
    while (!at_end()) {
      const std::size_t plain = kInStatement.skip(src_, pos_);
      code.append(src_.substr(pos_, plain - pos_));
      pos_ = plain;
      if (at_end()) break;
      char c = src_[pos_];
      if (c == '\n') {
        if (depth > 0) {  // implicit line joining inside brackets
          code.push_back(' ');
          ++pos_;
          ++line_;
          continue;
        }
        break;
      }
      if (c == '\\' && (peek(1) == '\n' || (peek(1) == '\r' && peek(2) == '\n'))) {  // explicit joining
        pos_ += peek(1) == '\r' ? 3 : 2;
        ++line_;
        code.push_back(' ');
        continue;
      }
      if (c == '#') {  // a trailing comment: skip to the line's end, which the loop then handles
        pos_ = std::min(src_.find('\n', pos_), src_.size());
        continue;
      }
      if (c == '\'' || c == '"') {
        skip_string();
        code += "''";
        continue;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      if (c == ';' && depth == 0) {
        emit_statement(code, segment_line, indent);
        segment_line = line_;
        ++pos_;
        continue;
      }
      if (c != '\r') code.push_back(c);
      ++pos_;
    }
    emit_statement(code, segment_line, indent);
    next_physical_line();
  }

  std::string_view src_;
  std::size_t pos_ = 0;
  std::uint32_t line_ = 1;
  std::vector<PythonLine> out_;
};

}  // namespace

std::vector<PythonLine> scan_python_lines(std::string_view source) { return Scanner(source).run(); }

}  // namespace opprof
