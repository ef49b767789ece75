#include "opprof/report/html.hpp"

#include <fmt/format.h>

#include "opprof/util/embedded.hpp"
#include "opprof/util/error.hpp"

namespace opprof {

// A build without an asset is broken, not the input.
std::string_view report_asset(std::string_view name) {
  std::string_view bytes = embedded_file(name);
  if (bytes.empty()) throw OutputError(fmt::format("this opprof was built without its report asset {}", name));
  return bytes;
}

std::string chart_js_script_element() {
  // Chart.js travels with its licence, as the MIT licence asks of every copy.
  std::string out = "<!--\nChart.js 3.9.1, embedded below:\n";
  out += report_asset("LICENSE.md");
  out += "-->\n<script>\n";
  out += report_asset("chart.min.js");
  out += "\n</script>\n";
  return out;
}

std::string json_for_script_element(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (char c : json) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_html_report(const ProfileReader& profile) {
  const std::string data = json_for_script_element(html_report_data(profile));
  std::string page;
  page.reserve(data.size() + 300 * 1024);
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += fmt::format("<title>opprof report: {}</title>\n", html_escape(profile.path()));
  page += "<style>\n";
  page += report_asset("html_report.css");
  page += "</style>\n</head>\n<body>\n<div id=\"app\"><noscript>This report draws itself with JavaScript.</noscript></div>\n";
  page += "<script type=\"application/json\" id=\"opprof-data\">";
  page += data;
  page += "</script>\n";
  page += chart_js_script_element();
  page += "<script>\n";
  page += report_asset("html_report.js");
  page += "\n</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace opprof
