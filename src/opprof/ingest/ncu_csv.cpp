#include "opprof/ingest/ncu_csv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <string_view>

#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

std::size_t NcuTable::metric_index(const std::string& name) const {
  auto it = std::find(metric_names.begin(), metric_names.end(), name);
  return it == metric_names.end() ? npos : static_cast<std::size_t>(it - metric_names.begin());
}

namespace {

// ncu's raw page always begins with these two columns; the header is found by this prefix because the
// program's own stdout and ncu's "==PROF==" lines come before it in the same stream.
constexpr std::string_view kHeaderPrefix = "\"ID\",\"Process ID\"";

// Columns that describe the launch rather than measure it. Every other column is a metric.
constexpr std::array<std::string_view, 11> kLaunchColumns = {
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
    "Stream", "Block Size", "Grid Size", "Device", "CC"};

// A field of the current record: where its content lies in the text and where it starts in the file.
struct Field {
  std::size_t begin = 0;  // first content byte (after the opening quote of a quoted field)
  std::size_t size = 0;   // content bytes; doubled quotes are still doubled
  std::uint64_t line = 0;
  std::uint64_t column = 0;
  bool has_doubled_quotes = false;
};

// RFC-4180 records over the whole text, tracking lines for messages. Lines that do not start with a quote
// are not CSV (ncu quotes every field): they are ncu's own messages or the profiled program's output, which
// share the stream with the CSV, and are skipped.
class CsvScanner {
 public:
  CsvScanner(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  // Moves to the first line that starts with prefix; false when there is none.
  bool seek_line_starting_with(std::string_view prefix) {
    std::size_t at = 0;
    while (true) {
      at = text_.find(prefix, at);
      if (at == std::string_view::npos) return false;
      if (at == 0 || text_[at - 1] == '\n') break;
      ++at;
    }
    line_ += static_cast<std::uint64_t>(std::count(text_.begin(), text_.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    pos_ = at;
    line_start_ = at;
    return true;
  }

  // Reads the next record into fields; false at the end of the text.
  bool next_record(std::vector<Field>& fields) {
    const std::size_t n = text_.size();
    while (pos_ < n && text_[pos_] != '"') {
      const void* nl = std::memchr(text_.data() + pos_, '\n', n - pos_);
      if (!nl) {
        pos_ = n;
        break;
      }
      pos_ = static_cast<std::size_t>(static_cast<const char*>(nl) - text_.data()) + 1;
      new_line_at(pos_);
    }
    if (pos_ >= n) return false;
    record_line_ = line_;
    fields.clear();
    while (true) {
      Field f;
      f.line = line_;
      f.column = pos_ - line_start_ + 1;
      if (pos_ < n && text_[pos_] == '"') {
        scan_quoted(f);
      } else {
        std::size_t end = pos_;
        while (end < n && text_[end] != ',' && text_[end] != '\n') ++end;
        f.begin = pos_;
        f.size = end - pos_;
        if (f.size > 0 && text_[end - 1] == '\r') --f.size;
        pos_ = end;
      }
      fields.push_back(f);
      if (pos_ >= n) return true;
      char c = text_[pos_];
      if (c == ',') {
        ++pos_;
        continue;
      }
      if (c == '\r') {  // CRLF line ends
        if (pos_ + 1 == n) {
          pos_ = n;
          return true;
        }
        if (text_[pos_ + 1] == '\n') c = text_[++pos_];
      }
      if (c == '\n') {
        ++pos_;
        new_line_at(pos_);
        return true;
      }
      fail(line_, pos_ - line_start_ + 1,
           fmt::format("expected ',' or the end of the line after a quoted field, found '{}'", c));
    }
  }

  std::uint64_t record_line() const { return record_line_; }
  std::string_view raw(const Field& f) const { return text_.substr(f.begin, f.size); }

  // The field's text with doubled quotes undone.
  std::string text(const Field& f) const {
    std::string_view r = raw(f);
    if (!f.has_doubled_quotes) return std::string(r);
    std::string out;
    out.reserve(r.size());
    for (std::size_t i = 0; i < r.size(); ++i) {
      out.push_back(r[i]);
      if (r[i] == '"' && i + 1 < r.size() && r[i + 1] == '"') ++i;
    }
    return out;
  }

  [[noreturn]] void fail(std::uint64_t line, std::uint64_t column, std::string message) const {
    InputPosition pos;
    pos.line = line;
    pos.column = column;
    pos.known = true;
    throw InputError(path_, std::move(message), pos);
  }
  [[noreturn]] void fail(const Field& f, std::string message) const { fail(f.line, f.column, std::move(message)); }

 private:
  void new_line_at(std::size_t offset) {
    ++line_;
    line_start_ = offset;
  }

  // pos_ is at the opening quote; leaves pos_ after the closing one. Quoted fields may span lines.
  void scan_quoted(Field& f) {
    const std::size_t n = text_.size();
    const char* data = text_.data();
    std::size_t p = pos_ + 1;
    f.begin = p;
    // A plain loop rather than memchr: most cells are a few bytes long, where a call costs more than it saves.
    while (true) {
      while (p < n && data[p] != '"') {
        if (data[p] == '\n') new_line_at(p + 1);
        ++p;
      }
      if (p >= n) fail(f, "unterminated quoted field: the file ends inside it (was the CSV truncated?)");
      if (p + 1 < n && data[p + 1] == '"') {
        f.has_doubled_quotes = true;
        p += 2;
        continue;
      }
      f.size = p - f.begin;
      pos_ = p + 1;
      return;
    }
  }

  const std::string& path_;
  std::string_view text_;
  std::size_t pos_ = 0;
  std::uint64_t line_ = 1;
  std::size_t line_start_ = 0;
  std::uint64_t record_line_ = 0;
};

// Digits with optional thousands separators ("131,472"); nullopt for anything else.
std::optional<std::uint64_t> parse_unsigned(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  bool digit_seen = false;
  for (char c : s) {
    if (c == ',') continue;
    if (c < '0' || c > '9') return std::nullopt;
    std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return std::nullopt;
    v = v * 10 + d;
    digit_seen = true;
  }
  if (!digit_seen) return std::nullopt;
  return v;
}

constexpr std::array<double, 23> kPowersOfTen = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

// A metric cell: "-1,995.63", "0.10", "1e-05", with thousands separators in groups of three. NaN for a
// cell that is not a number ("", "n/a", "NVIDIA H200"), so text attributes never pose as values.
double parse_metric_value(std::string_view s) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (s.empty()) return kNaN;
  std::size_t i = 0;
  bool negative = false;
  if (s[0] == '-' || s[0] == '+') {
    negative = s[0] == '-';
    i = 1;
  }
  std::uint64_t mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  int group = 0;  // digits since the last separator
  bool separators = false;
  const std::size_t int_begin = i;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      if (digits < 19) mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
      ++digits;
      ++group;
    } else if (c == ',') {
      if (group == 0 || group > 3 || (separators && group != 3)) return kNaN;
      separators = true;
      group = 0;
    } else {
      break;
    }
  }
  if (i == int_begin || (separators && group != 3)) return kNaN;
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      if (digits < 19) mantissa = mantissa * 10 + static_cast<std::uint64_t>(s[i] - '0');
      ++digits;
      ++fraction_digits;
    }
  }
  bool exponent = false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    exponent = true;
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    std::size_t exp_begin = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == exp_begin) return kNaN;
  }
  if (i != s.size()) return kNaN;
  // Exact fast path: an integer mantissa below 2^53 divided by an exact power of ten rounds correctly.
  if (!exponent && digits <= 19 && mantissa <= (std::uint64_t{1} << 53) &&
      fraction_digits < static_cast<int>(kPowersOfTen.size())) {
    double v = static_cast<double>(mantissa) / kPowersOfTen[static_cast<std::size_t>(fraction_digits)];
    return negative ? -v : v;
  }
  std::string plain;
  plain.reserve(s.size());
  for (char c : s)
    if (c != ',' && c != '+') plain.push_back(c);
  double v = kNaN;
  auto res = std::from_chars(plain.data(), plain.data() + plain.size(), v);
  if (res.ec != std::errc() || res.ptr != plain.data() + plain.size()) return kNaN;
  return v;
}

// True when unit carries a scale prefix ("usecond", "Kbyte", "Gbyte/second", "cycle/nsecond", "Mhz"): ncu
// prints those when run without --print-units base, and then picks the scale per column, so values cannot
// be compared with other captures. A time in the numerator is scaled even without a prefix ("second"),
// because the base unit of time is "ns"; in the denominator seconds are the base ("byte/s" is what
// --print-units base prints for a .per_second rate).
bool is_scaled_unit(std::string_view unit) {
  static constexpr std::array<std::string_view, 14> kPrefixes = {"Ki", "Mi", "Gi", "Ti", "K", "M", "G",
                                                                 "T",  "P",  "m",  "u",  "n", "\xC2\xB5", "k"};
  static constexpr std::array<std::string_view, 16> kScalable = {
      "byte", "second", "cycle", "inst", "hz",      "Hz",       "warp",     "sector",
      "request", "thread", "block", "ops", "branches", "register", "instruction", "B"};
  static constexpr std::array<std::string_view, 3> kScaledTimes = {"us", "ms", "\xC2\xB5s"};
  auto parts = split(unit, '/');
  for (std::size_t p = 0; p < parts.size(); ++p) {
    std::string_view part = trim(parts[p]);
    // Seconds are the base of a rate ("byte/s", "sector/second"), a scaled time anywhere else.
    if (p == 0 && (part == "second" || part == "s")) return true;
    if (std::find(kScaledTimes.begin(), kScaledTimes.end(), part) != kScaledTimes.end()) return true;
    for (std::string_view prefix : kPrefixes) {
      if (!starts_with(part, prefix)) continue;
      std::string_view base = part.substr(prefix.size());
      if (std::find(kScalable.begin(), kScalable.end(), base) != kScalable.end()) return true;
    }
  }
  return false;
}

Dim3 parse_dim3(const CsvScanner& csv, const Field& f, std::string_view column) {
  std::string_view s = trim(csv.raw(f));
  if (s.empty()) return {};  // not reported: the identity falls back to the name alone
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') {
    csv.fail(f, fmt::format("\"{}\" is \"{}\", expected \"(x, y, z)\"", column, s));
  }
  auto parts = split(s.substr(1, s.size() - 2), ',');
  std::array<std::uint32_t, 3> v{};
  bool ok = parts.size() == 3;
  for (std::size_t i = 0; ok && i < 3; ++i) {
    std::string_view t = trim(parts[i]);
    auto res = std::from_chars(t.data(), t.data() + t.size(), v[i]);
    ok = !t.empty() && res.ec == std::errc() && res.ptr == t.data() + t.size();
  }
  if (!ok) csv.fail(f, fmt::format("\"{}\" is \"{}\", expected \"(x, y, z)\"", column, s));
  return Dim3{v[0], v[1], v[2]};
}

template <typename T>
T parse_integer_field(const CsvScanner& csv, const Field& f, std::string_view column) {
  auto v = parse_unsigned(csv.raw(f));
  if (!v || *v > std::numeric_limits<T>::max()) {
    csv.fail(f, fmt::format("\"{}\" is \"{}\", expected a non-negative integer", column, csv.raw(f)));
  }
  return static_cast<T>(*v);
}

// Sorts every per-row column by the ID column, keeping file order among equal IDs.
void sort_rows_by_id(NcuTable& t) {
  if (std::is_sorted(t.id.begin(), t.id.end())) return;
  std::vector<std::size_t> order(t.rows());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return t.id[a] < t.id[b]; });
  auto permute = [&](auto& column) {
    std::remove_reference_t<decltype(column)> sorted;
    sorted.reserve(column.size());
    for (std::size_t i : order) sorted.push_back(std::move(column[i]));
    column = std::move(sorted);
  };
  permute(t.id); permute(t.pid); permute(t.kernel_name); permute(t.context); permute(t.stream);
  permute(t.device); permute(t.grid); permute(t.block); permute(t.line);
  const std::size_t m = t.metric_names.size();
  std::vector<double> values(t.values.size());
  for (std::size_t r = 0; r < order.size(); ++r) {
    std::copy_n(t.values.begin() + static_cast<std::ptrdiff_t>(order[r] * m), m,
                values.begin() + static_cast<std::ptrdiff_t>(r * m));
  }
  t.values = std::move(values);
}

}  // namespace

void check_ncu_units(const NcuTable& table, const std::vector<DeclaredUnit>& declared) {
  auto fail = [&](std::size_t m, const std::string& message) {
    throw InputError(table.path, message,
                     InputPosition{table.units_line, m < table.metric_unit_columns.size() ? table.metric_unit_columns[m] : 0,
                                   0, table.units_line > 0});
  };
  constexpr std::string_view kRerun =
      "rerun ncu with --print-units base so every value is in a fixed base unit (ns, byte, cycle, ...)";
  auto shown = [](const std::string& unit) { return unit.empty() ? std::string("no unit") : fmt::format("\"{}\"", unit); };
  for (const DeclaredUnit& d : declared) {
    const std::size_t m = table.metric_index(d.metric);
    if (m == NcuTable::npos || table.metric_units[m] == d.unit) continue;
    const std::string& got = table.metric_units[m];
    fail(m, fmt::format("column \"{}\" is in {}, but {}:{} declares {} for it; {}", d.metric, shown(got), d.source,
                        d.line, shown(d.unit),
                        is_scaled_unit(got) ? std::string(kRerun)
                                            : std::string("the values would be misread: fix the metric set's unit "
                                                          "column, or capture with the ncu the set was written for")));
  }
  std::vector<std::size_t> scaled;
  for (std::size_t m = 0; m < table.metric_units.size(); ++m)
    if (is_scaled_unit(table.metric_units[m])) scaled.push_back(m);
  if (!scaled.empty()) {
    std::string more = scaled.size() > 1 ? fmt::format(" (and {} more scaled columns)", scaled.size() - 1) : "";
    fail(scaled.front(), fmt::format("column \"{}\" is in \"{}\", a scaled unit{}; {}", table.metric_names[scaled.front()],
                                     table.metric_units[scaled.front()], more, kRerun));
  }
}

NcuTable read_ncu_csv(const std::string& path) {
  const std::string content = read_file(path);
  CsvScanner csv(path, content);
  NcuTable table;
  table.path = path;

  if (!csv.seek_line_starting_with(kHeaderPrefix)) {
    throw InputError(path, "not an ncu --csv --page raw file: no header row starting with " + std::string(kHeaderPrefix),
                     InputPosition{1, 1, 0, true});
  }
  std::vector<Field> fields;
  csv.next_record(fields);
  const std::uint64_t header_line = csv.record_line();
  std::vector<std::string> header;
  header.reserve(fields.size());
  for (const Field& f : fields) header.push_back(csv.text(f));
  const std::size_t columns = header.size();

  auto find_column = [&](std::string_view name) -> std::size_t {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? NcuTable::npos : static_cast<std::size_t>(it - header.begin());
  };
  if (find_column("Metric Name") != NcuTable::npos && find_column("Metric Value") != NcuTable::npos) {
    csv.fail(header_line, 1, "this is ncu's details page (one row per metric); rerun ncu with --csv --page raw");
  }
  auto required = [&](std::string_view name) {
    std::size_t c = find_column(name);
    if (c == NcuTable::npos) {
      csv.fail(header_line, 1,
               fmt::format("the header has no \"{}\" column; expected the output of ncu --csv --page raw", name));
    }
    return c;
  };
  const std::size_t col_id = required("ID");
  const std::size_t col_pid = required("Process ID");
  const std::size_t col_name = required("Kernel Name");
  const std::size_t col_block = required("Block Size");
  const std::size_t col_grid = required("Grid Size");
  // Older or trimmed outputs may lack these; 0 then means "not reported".
  const std::size_t col_context = find_column("Context");
  const std::size_t col_stream = find_column("Stream");
  const std::size_t col_device = find_column("Device");

  std::vector<std::size_t> metric_columns;
  for (std::size_t c = 0; c < columns; ++c) {
    if (std::find(kLaunchColumns.begin(), kLaunchColumns.end(), header[c]) == kLaunchColumns.end()) {
      metric_columns.push_back(c);
      table.metric_names.push_back(header[c]);
    }
  }
  const std::size_t metrics = metric_columns.size();

  // The units row: ncu prints it right after the header with an empty ID cell.
  if (!csv.next_record(fields)) {
    csv.fail(header_line + 1, 1, "the file ends after the header: no units row and no kernels (truncated?)");
  }
  const std::uint64_t units_line = csv.record_line();
  if (fields.size() != columns) {
    csv.fail(units_line, 1, fmt::format("units row has {} fields, the header has {}", fields.size(), columns));
  }
  if (!trim(csv.raw(fields[col_id])).empty()) {
    csv.fail(fields[col_id], "expected ncu's units row (empty \"ID\") after the header; every metric needs its unit");
  }
  table.units_line = units_line;
  for (std::size_t m = 0; m < metrics; ++m) {
    const Field& f = fields[metric_columns[m]];
    table.metric_units.push_back(csv.text(f));
    table.metric_unit_columns.push_back(f.column);
  }
  check_ncu_units(table, {});

  // Rough row count from the size, so the columns grow once instead of doubling repeatedly.
  const std::size_t expected_rows = std::max<std::size_t>(16, content.size() / std::max<std::size_t>(1, columns * 6));
  table.values.reserve(std::min<std::size_t>(expected_rows, std::size_t{1} << 22) * metrics);

  while (csv.next_record(fields)) {
    const std::uint64_t line = csv.record_line();
    if (fields.size() != columns) {
      csv.fail(line, 1, fmt::format("row has {} fields, the header has {}", fields.size(), columns));
    }
    table.id.push_back(parse_integer_field<std::uint64_t>(csv, fields[col_id], "ID"));
    table.pid.push_back(parse_integer_field<std::uint32_t>(csv, fields[col_pid], "Process ID"));
    table.kernel_name.push_back(csv.text(fields[col_name]));
    table.context.push_back(col_context == NcuTable::npos ? 0u
                                                         : parse_integer_field<std::uint32_t>(csv, fields[col_context], "Context"));
    table.stream.push_back(col_stream == NcuTable::npos ? 0u
                                                       : parse_integer_field<std::uint32_t>(csv, fields[col_stream], "Stream"));
    table.device.push_back(col_device == NcuTable::npos ? 0u
                                                       : parse_integer_field<std::uint32_t>(csv, fields[col_device], "Device"));
    table.block.push_back(parse_dim3(csv, fields[col_block], "Block Size"));
    table.grid.push_back(parse_dim3(csv, fields[col_grid], "Grid Size"));
    table.line.push_back(line);
    for (std::size_t c : metric_columns) table.values.push_back(parse_metric_value(csv.raw(fields[c])));
  }
  sort_rows_by_id(table);
  return table;
}

}  // namespace opprof
