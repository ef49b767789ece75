#include "opprof/report/text_table.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "opprof/util/error.hpp"

namespace opprof {

void Page::raw(std::string_view text) {
  out_ += text;
  out_ += '\n';
}

void Page::title(std::string_view text) { raw(style_.bold(shorten_middle(text, width_))); }

void Page::line(std::string_view text) {
  const std::string safe = printable(text);
  if (display_width(safe) <= width_) return raw(safe);  // as it is: aligned figures keep their spaces
  const std::string_view view = safe;
  const std::size_t indent = std::min(view.find_first_not_of(' '), view.size());
  prose(view.substr(0, indent), view.substr(indent), std::string(indent + 2, ' '));
}

void Page::prose(std::string_view first_prefix, std::string_view text, std::string_view rest_prefix) {
  for (const std::string& l : wrap_text(printable(text), width_, first_prefix, rest_prefix)) raw(l);
}

void Page::fact(std::string_view key, std::string_view value) {
  const std::string prefix = fmt::format("  {}: ", printable(key));
  const std::size_t used = display_width(prefix);
  if (used >= width_) return line(prefix + printable(value));
  raw(prefix + shorten_middle(value, width_ - used));
}

std::vector<Column> fit_columns(std::size_t width, std::string name_header, std::size_t longest,
                                std::vector<Column> columns, std::size_t required) {
  constexpr std::size_t kIndent = 2, kMinName = 24, kLeastName = 8;
  std::size_t others = 0;
  std::vector<Column> out;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const std::size_t w = columns[i].gap + columns[i].width;
    if (i >= required && kIndent + kMinName + others + w > width) break;
    others += w;
    out.push_back(columns[i]);
  }
  std::size_t name = width > kIndent + others ? width - kIndent - others : kLeastName;
  name = std::max(kLeastName, std::min(name, std::max(longest, display_width(name_header))));
  out.insert(out.begin(), Column{std::move(name_header), name, false, 0});
  return out;
}

std::string table_row(const std::vector<Column>& columns, const std::vector<std::string>& cells, const Style& style,
                      std::size_t styled_cell) {
  std::string row = "  ";
  for (std::size_t i = 0; i < columns.size() && i < cells.size(); ++i) {
    const Column& c = columns[i];
    row += std::string(c.gap, ' ');
    const std::string text = printable(cells[i]);
    const std::string cell = c.right ? pad_left(text, c.width) : pad_right(text, c.width);
    row += i == styled_cell && cells[i] != "-" ? style.cyan(cell) : cell;
  }
  // A left-aligned last cell leaves no padding at the end of the line.
  while (!row.empty() && row.back() == ' ') row.pop_back();
  return row;
}

std::string table_header(const std::vector<Column>& columns, const Style& style) {
  std::vector<std::string> cells;
  for (const Column& c : columns) cells.push_back(c.header);
  return style.bold(table_row(columns, cells, Style()));
}

std::size_t longest_name(const std::vector<std::string>& names) {
  std::size_t w = 0;
  for (const std::string& n : names) w = std::max(w, display_width(printable(n)));  // as shown
  return w;
}

}  // namespace opprof
