#include "opprof/report/text_layout.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <set>

#include "opprof/util/error.hpp"

namespace opprof {
namespace {

constexpr std::string_view kEllipsis = "...";
constexpr std::string_view kMiddleMark = "…";  // one column

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0u) == 0x80u; }

// Byte offset of the start of the character at column col (col <= display width; no escapes inside).
std::size_t byte_at_column(std::string_view text, std::size_t col) {
  std::size_t i = 0;
  for (std::size_t seen = 0; i < text.size(); ++i) {
    if (is_continuation_byte(text[i])) continue;
    if (seen == col) return i;
    ++seen;
  }
  return text.size();
}

// The first head and the last tail columns of text, joined by the middle mark.
std::string cut_middle(std::string_view text, std::size_t head, std::size_t tail) {
  const std::size_t columns = display_width(text);
  return std::string(text.substr(0, byte_at_column(text, head))) + std::string(kMiddleMark) +
         std::string(text.substr(byte_at_column(text, columns - tail)));
}

}  // namespace

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {  // CSI ... final byte
      i += 2;
      while (i < text.size() && !(text[i] >= '@' && text[i] <= '~')) ++i;
      continue;
    }
    if (!is_continuation_byte(text[i])) ++width;
  }
  return width;
}

std::string fit_width(std::string_view raw, std::size_t width, bool keep_tail) {
  const std::string escaped = printable(raw);
  const std::string_view text = escaped;
  if (text.size() <= width) return std::string(text);
  if (width <= kEllipsis.size()) return std::string(kEllipsis.substr(0, width));
  const std::size_t keep = width - kEllipsis.size();
  if (keep_tail) {
    std::size_t start = text.size() - keep;
    while (start < text.size() && is_continuation_byte(text[start])) ++start;  // never split a UTF-8 character
    return std::string(kEllipsis) + std::string(text.substr(start));
  }
  std::size_t end = keep;
  while (end > 0 && is_continuation_byte(text[end])) --end;
  return std::string(text.substr(0, end)) + std::string(kEllipsis);
}

std::string shorten_middle(std::string_view raw, std::size_t width) {
  const std::string text = printable(raw);
  if (display_width(text) <= width) return std::string(text);
  if (width == 0) return "";
  const std::size_t keep = width - 1;
  const std::size_t head = (keep + 1) / 2;  // the start names the kernel's kind: it gets the odd column
  return cut_middle(text, head, keep - head);
}

std::vector<std::string> shorten_distinct(const std::vector<std::string>& raw_names, std::size_t width) {
  std::vector<std::string> names;
  names.reserve(raw_names.size());
  for (const std::string& n : raw_names) names.push_back(printable(n));
  std::vector<std::string> out;
  out.reserve(names.size());
  for (const std::string& n : names) out.push_back(shorten_middle(n, width));
  if (width < 2) return out;
  // Names that are equal stay equal; shortened names that collide with another name get another cut.
  std::map<std::string, std::set<std::string>> originals;  // shortened -> distinct names it stands for
  for (std::size_t i = 0; i < names.size(); ++i) originals[out[i]].insert(names[i]);
  auto taken = [&](const std::string& s) { return originals.count(s) > 0; };
  for (auto& [shortened, group] : std::map(originals)) {
    if (group.size() < 2) continue;
    const std::vector<std::string> members(group.begin(), group.end());
    const std::size_t keep = width - 1;
    // Cuts by distance from the middle: the first that tells every member apart, without taking a
    // shortening another name already has.
    std::vector<std::string> chosen;
    const std::size_t middle = (keep + 1) / 2;
    for (std::size_t step = 1; step <= keep && chosen.empty(); ++step) {
      for (int sign : {-1, 1}) {
        if ((sign < 0 && step > middle) || (sign > 0 && middle + step > keep)) continue;
        const std::size_t head = sign < 0 ? middle - step : middle + step;
        std::vector<std::string> candidate;
        std::set<std::string> seen;
        for (const std::string& m : members) {
          candidate.push_back(display_width(m) <= width ? m : cut_middle(m, head, keep - head));
          seen.insert(candidate.back());
        }
        if (seen.size() != members.size() ||
            std::any_of(candidate.begin(), candidate.end(), [&](const std::string& c) { return taken(c); }))
          continue;
        chosen = std::move(candidate);
        break;
      }
    }
    if (chosen.empty()) {  // they differ only deep in the middle: number them
      for (std::size_t k = 0; k < members.size(); ++k) {
        const std::string mark = fmt::format("~{}", k + 1);
        chosen.push_back(shorten_middle(members[k], width - std::min(width, mark.size())) + mark);
      }
    }
    originals.erase(shortened);
    for (std::size_t k = 0; k < members.size(); ++k) {
      originals[chosen[k]].insert(members[k]);
      for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == members[k]) out[i] = chosen[k];
    }
  }
  return out;
}

std::string pad_right(std::string_view text, std::size_t width) {
  const std::size_t w = display_width(text);
  return std::string(text) + std::string(w < width ? width - w : 0, ' ');
}

std::string pad_left(std::string_view text, std::size_t width) {
  const std::size_t w = display_width(text);
  return std::string(w < width ? width - w : 0, ' ') + std::string(text);
}

std::vector<std::string> wrap_text(std::string_view text, std::size_t width, std::string_view first_prefix,
                                   std::string_view rest_prefix) {
  std::vector<std::string> lines;
  std::string line(first_prefix);
  std::size_t line_width = display_width(first_prefix);
  bool line_has_word = false;
  auto flush = [&] {
    lines.push_back(std::move(line));
    line = std::string(rest_prefix);
    line_width = display_width(rest_prefix);
    line_has_word = false;
  };
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size()) break;
    std::size_t end = text.find(' ', i);
    if (end == std::string_view::npos) end = text.size();
    std::string_view word = text.substr(i, end - i);
    i = end;
    std::size_t w = display_width(word);
    if (line_has_word && line_width + 1 + w > width) flush();
    if (line_has_word) {
      line += ' ';
      ++line_width;
    }
    // A word wider than a whole line is cut into pieces that fit.
    while (line_width + w > width && width > line_width) {
      const std::size_t fits = byte_at_column(word, width - line_width);
      line += word.substr(0, fits);
      word.remove_prefix(fits);
      w = display_width(word);
      flush();
    }
    line += word;
    line_width += w;
    line_has_word = true;
  }
  if (line_has_word || lines.empty()) lines.push_back(std::move(line));
  return lines;
}

std::string Style::wrap(std::string_view code, std::string_view text) const {
  if (!enabled_ || text.empty()) return std::string(text);
  return fmt::format("\x1b[{}m{}\x1b[0m", code, text);
}

bool use_color(std::string_view mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  if (mode != "auto") throw InputError("--color", fmt::format("'{}' is not auto, always or never", mode));
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  return ::isatty(STDOUT_FILENO) == 1;
}

std::size_t terminal_width(std::size_t fallback) {
  if (::isatty(STDOUT_FILENO) != 1) return fallback;
  if (const char* columns = std::getenv("COLUMNS")) {
    std::size_t n = 0;
    const std::string_view s(columns);
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && end == s.data() + s.size() && n > 0) return n;
  }
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return fallback;
}

}  // namespace opprof
