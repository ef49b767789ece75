#include "opprof/report/json_writer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace opprof {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one (a stray
// continuation byte, a truncated sequence, an overlong form, a surrogate, or beyond U+10FFFF).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t j) { return static_cast<unsigned char>(s[j]); };
  const unsigned char b0 = byte(i);
  std::size_t len = 0;
  std::uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0Fu;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07u;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t j = 1; j < len; ++j) {
    const unsigned char b = byte(i + j);
    if ((b & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      std::size_t len = utf8_sequence_length(text, i);
      if (len == 0) {
        out.append("\\ufffd");  // JSON text must be UTF-8; a Latin-1 byte in a path would break parsers
        ++i;
      } else {
        out.append(text.substr(i, len));
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      default:
        if (c < 0x20)
          out.append(fmt::format("\\u{:04x}", static_cast<unsigned>(c)));
        else
          out.push_back(static_cast<char>(c));
    }
    ++i;
  }
  out.push_back('"');
}

std::string json_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  append_json_string(out, text);
  return out;
}

void JsonWriter::newline() {
  if (indent_ <= 0) return;
  out_.push_back('\n');
  out_.append(stack_.size() * static_cast<std::size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) {
    if (!out_.empty()) throw std::logic_error("JsonWriter: a second top-level value");
    return;
  }
  Level& level = stack_.back();
  if (level.object) throw std::logic_error("JsonWriter: a value in an object needs a key");
  if (!level.empty) out_.push_back(',');
  level.empty = false;
  newline();
}

JsonWriter& JsonWriter::key(std::string_view k) {
  if (stack_.empty() || !stack_.back().object || after_key_)
    throw std::logic_error("JsonWriter: a key outside an object, or two keys in a row");
  Level& level = stack_.back();
  if (!level.empty) out_.push_back(',');
  level.empty = false;
  newline();
  append_json_string(out_, k);
  out_.append(indent_ > 0 ? ": " : ":");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::open(char bracket, bool object) {
  before_value();
  out_.push_back(bracket);
  stack_.push_back({object, true});
  return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline();
  out_.push_back(bracket);
  return *this;
}

JsonWriter& JsonWriter::begin_object() { return open('{', true); }

JsonWriter& JsonWriter::end_object() {
  if (stack_.empty() || !stack_.back().object || after_key_)
    throw std::logic_error("JsonWriter: end_object without a matching begin_object, or after a key");
  return close('}');
}

JsonWriter& JsonWriter::begin_array() { return open('[', false); }

JsonWriter& JsonWriter::end_array() {
  if (stack_.empty() || stack_.back().object)
    throw std::logic_error("JsonWriter: end_array without a matching begin_array");
  return close(']');
}

JsonWriter& JsonWriter::string(std::string_view v) {
  before_value();
  append_json_string(out_, v);
  return *this;
}

JsonWriter& JsonWriter::number(double v) {
  before_value();
  // fmt's shortest round-trip form ("0.1", "1e+20") is valid JSON; JSON has no NaN or infinity.
  if (std::isfinite(v))
    out_.append(fmt::format("{}", v));
  else
    out_.append("null");
  return *this;
}

JsonWriter& JsonWriter::integer(std::int64_t v) {
  before_value();
  out_.append(fmt::format("{}", v));
  return *this;
}

JsonWriter& JsonWriter::unsigned_integer(std::uint64_t v) {
  before_value();
  out_.append(fmt::format("{}", v));
  return *this;
}

JsonWriter& JsonWriter::boolean(bool v) {
  before_value();
  out_.append(v ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_.append("null");
  return *this;
}

JsonWriter& JsonWriter::string_or_null(std::string_view v) { return v.empty() ? null() : string(v); }

JsonWriter& JsonWriter::integer_or_null(std::int64_t v) { return v < 0 ? null() : integer(v); }

JsonWriter& JsonWriter::number_or_null(double v) { return v < 0 ? null() : number(v); }

const std::string& JsonWriter::str() const {
  if (!stack_.empty() || after_key_) throw std::logic_error("JsonWriter: the document is not complete");
  return out_;
}

}  // namespace opprof

namespace opprof {
namespace {

// Whether text is a number in JSON's own grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool is_json_number(std::string_view t) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > start;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0')
    ++i;
  else if (!digits())
    return false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

}  // namespace

JsonWriter& JsonWriter::typed(std::string_view text) {
  if (text == "true" || text == "false") return boolean(text == "true");
  if (!is_json_number(text)) return string(text);
  before_value();
  out_.append(text);  // already a JSON number, digit for digit
  return *this;
}

JsonWriter& JsonWriter::value(const JsonValue& v) {
  switch (v.kind_) {
    case JsonValue::Kind::kNull: return null();
    case JsonValue::Kind::kString: return string(v.text_);
    case JsonValue::Kind::kInteger: return integer(v.integer_);
    case JsonValue::Kind::kUnsigned: return unsigned_integer(v.unsigned_);
    case JsonValue::Kind::kNumber: return number(v.number_);
    case JsonValue::Kind::kBoolean: return boolean(v.boolean_);
  }
  return null();
}

JsonWriter& JsonWriter::fields(std::initializer_list<JsonField> fields) {
  for (const JsonField& f : fields) key(f.key).value(f.value);
  return *this;
}

JsonWriter& JsonWriter::strings(const std::vector<std::string>& items) {
  begin_array();
  for (const std::string& item : items) string(item);
  return end_array();
}

}  // namespace opprof
