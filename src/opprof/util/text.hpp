#pragma once
// Small text helpers shared by the readers.
#include <string>
#include <string_view>
#include <vector>

namespace opprof {

std::string_view trim(std::string_view s, std::string_view chars = " \t\r\n");
std::vector<std::string_view> split(std::string_view s, char sep);
// Lines without their terminators ("\n" or "\r\n").
std::vector<std::string_view> split_lines(std::string_view s);
inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
inline bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
inline bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }
std::string join(const std::vector<std::string>& parts, std::string_view sep);

// Reads a whole file (gunzipping it when it ends in .gz). Throws InputError when it cannot.
std::string read_file(const std::string& path);

// Natural order: digit runs compare as numbers ("h.2" before "h.10", "run_2" before "run_10").
bool natural_less(std::string_view a, std::string_view b);

}  // namespace opprof
