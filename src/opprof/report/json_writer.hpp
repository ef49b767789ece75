#pragma once
// A small streaming JSON writer for reports, so that JSON output needs no library beyond fmt. It keeps
// the nesting and commas right, writes strings escaped per RFC 8259 (and valid UTF-8: an invalid byte
// becomes U+FFFD), and writes non-finite numbers as null, which is what JSON has for "unknown".
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace opprof {

// Appends text to out as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view text);
// The JSON string literal of text, quotes included.
std::string json_quote(std::string_view text);

// One value for JsonWriter::fields: text, an integer, a number, a boolean, or null.
class JsonValue {
 public:
  enum class Kind : std::uint8_t { kNull, kString, kInteger, kUnsigned, kNumber, kBoolean };
  JsonValue(std::string_view v) : kind_(Kind::kString), text_(v) {}
  JsonValue(const std::string& v) : kind_(Kind::kString), text_(v) {}
  JsonValue(const char* v) : kind_(Kind::kString), text_(v) {}
  JsonValue(double v) : kind_(Kind::kNumber), number_(v) {}
  JsonValue(bool v) : kind_(Kind::kBoolean), boolean_(v) {}
  template <class T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  JsonValue(T v) {
    if constexpr (std::is_signed_v<T>) {
      kind_ = Kind::kInteger;
      integer_ = v;
    } else {
      kind_ = Kind::kUnsigned;
      unsigned_ = v;
    }
  }
  static JsonValue null() { return JsonValue(); }
  // The reports' "unknown" conventions as null: an empty string, a negative count or figure.
  static JsonValue or_null(std::string_view v) { return v.empty() ? null() : JsonValue(v); }
  static JsonValue or_null(std::int64_t v) { return v < 0 ? null() : JsonValue(v); }
  static JsonValue or_null(double v) { return v < 0 ? null() : JsonValue(v); }

 private:
  friend class JsonWriter;
  JsonValue() = default;
  Kind kind_ = Kind::kNull;
  std::string_view text_;
  double number_ = 0;
  std::int64_t integer_ = 0;
  std::uint64_t unsigned_ = 0;
  bool boolean_ = false;
};

struct JsonField {
  std::string_view key;
  JsonValue value;
};

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

  // A text value with its type restored: "true"/"false" as booleans, integers and decimal numbers (as
  // written: no leading zeros, no "+", no hex, no "nan") as numbers, anything else as a string.
  JsonWriter& typed(std::string_view text);
  // Several keys and their values, in order; only inside an object.
  JsonWriter& fields(std::initializer_list<JsonField> fields);
  JsonWriter& value(const JsonValue& v);
  // An array of strings.
  JsonWriter& strings(const std::vector<std::string>& items);

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
