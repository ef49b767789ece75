#pragma once
// A small streaming JSON writer for reports, so that JSON output needs no library beyond fmt. It keeps
// the nesting and commas right, writes strings escaped per RFC 8259 (and valid UTF-8: an invalid byte
// becomes U+FFFD), and writes non-finite numbers as null, which is what JSON has for "unknown".
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace opprof {

// Appends text to out as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view text);
// The JSON string literal of text, quotes included.
std::string json_quote(std::string_view text);

class JsonWriter {
 public:
  // indent: spaces per level; 0 writes everything on one line.
  explicit JsonWriter(int indent = 2) : indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // The next value's key; only inside an object.
  JsonWriter& key(std::string_view k);

  JsonWriter& string(std::string_view v);
  JsonWriter& number(double v);  // NaN and infinities are written as null
  JsonWriter& integer(std::int64_t v);
  JsonWriter& unsigned_integer(std::uint64_t v);
  JsonWriter& boolean(bool v);
  JsonWriter& null();
  // The reports' "unknown" conventions, written as null: an empty string, a negative count or figure.
  JsonWriter& string_or_null(std::string_view v);
  JsonWriter& integer_or_null(std::int64_t v);
  JsonWriter& number_or_null(double v);

  // The document; every object and array must be closed.
  const std::string& str() const;

 private:
  JsonWriter& open(char bracket, bool object);  // '{' or '['
  JsonWriter& close(char bracket);              // after the caller checked the nesting
  void before_value();
  void newline();
  struct Level {
    bool object = false;
    bool empty = true;
  };
  std::string out_;
  std::vector<Level> stack_;
  int indent_;
  bool after_key_ = false;
};

}  // namespace opprof
