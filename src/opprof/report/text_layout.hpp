#pragma once
// Laying text out in terminal columns: display width of UTF-8 text, names shortened in the middle so
// that a list of them stays distinct, prose wrapped to a width, and ANSI colour that never counts as width.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace opprof {

// Columns the text takes on a terminal: one per UTF-8 character (combining and wide characters are not
// told apart: kernel and module names are ASCII), ANSI escape sequences none.
std::size_t display_width(std::string_view text);

// Names are whatever the trace said: every function here that shortens or pads a name shows it through
// printable() first (newlines, escapes, invalid UTF-8 escaped), so one cell stays one cell on one line
// and cannot drive the terminal.

// text cut to width columns with "..." marking the cut: at the end, or at the start when keep_tail.
std::string fit_width(std::string_view text, std::size_t width, bool keep_tail = false);

// text in at most width columns, its middle replaced by "…" so that both the start (the kernel's kind)
// and the end (its index, a module's layer) stay readable.
std::string shorten_middle(std::string_view text, std::size_t width);

// Every name in at most width columns, distinct where the names are: names that shorten_middle would make
// equal get another cut (more of the start or of the end), or else a "~N" mark, N counting from 1 in the
// order given.
std::vector<std::string> shorten_distinct(const std::vector<std::string>& names, std::size_t width);

// text padded with spaces to width columns, on the right (left-aligned) or on the left.
std::string pad_right(std::string_view text, std::size_t width);
std::string pad_left(std::string_view text, std::size_t width);

// Prose wrapped at spaces into lines of at most width columns: the first line starts with first_prefix,
// the others with rest_prefix (both counted in the width); a word longer than a line is cut.
std::vector<std::string> wrap_text(std::string_view text, std::size_t width, std::string_view first_prefix,
                                   std::string_view rest_prefix);

// ANSI colour for terminal output; with enabled false every call returns the text as it is.
class Style {
 public:
  explicit Style(bool enabled = false) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  std::string bold(std::string_view text) const { return wrap("1", text); }
  std::string dim(std::string_view text) const { return wrap("2", text); }
  std::string red(std::string_view text) const { return wrap("31", text); }
  std::string green(std::string_view text) const { return wrap("32", text); }
  std::string yellow(std::string_view text) const { return wrap("33", text); }
  std::string cyan(std::string_view text) const { return wrap("36", text); }

 private:
  std::string wrap(std::string_view code, std::string_view text) const;
  bool enabled_;
};

// Whether a report printed to stdout should use colour: mode "always", "never", or "auto" (stdout is a
// terminal and NO_COLOR is unset or empty, https://no-color.org). Throws InputError for another mode.
bool use_color(std::string_view mode);
// The width to lay reports out in: the terminal's when stdout is one (COLUMNS, else the TIOCGWINSZ
// ioctl), else fallback.
std::size_t terminal_width(std::size_t fallback = 100);

}  // namespace opprof
