#pragma once
// A text page of a given width for the terminal reports (`report`, `diff`): titles, prose wrapped to the
// width, facts with their values shortened to fit, and tables whose columns are chosen to fit.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "opprof/report/text_layout.hpp"

namespace opprof {

// The least width the reports lay themselves out in: narrower requests get this.
inline constexpr std::size_t kMinReportWidth = 40;

class Page {
 public:
  Page(std::size_t width, bool color) : width_(width < kMinReportWidth ? kMinReportWidth : width), style_(color) {}
  std::size_t width() const { return width_; }
  const Style& style() const { return style_; }
  void blank() { out_ += '\n'; }
  // A line laid out to fit already (styled cells, table rows).
  void raw(std::string_view text);
  // A bold line, shortened in the middle when it is too wide.
  void title(std::string_view text);
  // Prose: wrapped at the width, continuation lines indented two more than the first line's own indent.
  void line(std::string_view text);
  void prose(std::string_view first_prefix, std::string_view text, std::string_view rest_prefix);
  // "  key: value", the value shortened in the middle (paths) so that the line fits.
  void fact(std::string_view key, std::string_view value);
  std::string str() && { return std::move(out_); }

 private:
  std::size_t width_;
  Style style_;
  std::string out_;
};

// A column of a table: its header, width and alignment.
struct Column {
  std::string header;
  std::size_t width;
  bool right = true;
  std::size_t gap = 1;  // spaces before it
};

// The columns that fit in width after a two-space indent: the name column first (24 columns at least
// while others are added, at most the longest name), then the first `required` columns, then the others
// in order while they fit; the name column takes what is left.
std::vector<Column> fit_columns(std::size_t width, std::string name_header, std::size_t longest,
                                std::vector<Column> columns, std::size_t required);

// A table row: the cells padded to their columns (cells beyond the columns are left out); the cell at
// styled_cell is coloured unless it is "-".
std::string table_row(const std::vector<Column>& columns, const std::vector<std::string>& cells, const Style& style,
                      std::size_t styled_cell = std::string::npos);
// The header row, bold.
std::string table_header(const std::vector<Column>& columns, const Style& style);

// The widest of the names, in display columns.
std::size_t longest_name(const std::vector<std::string>& names);

}  // namespace opprof
