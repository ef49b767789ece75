#include "opprof/report/optimize_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "opprof/util/error.hpp"
#include "opprof/util/simdjson_dom.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

constexpr std::string_view kNonFiniteTokens[] = {"NaN", "Infinity", "-Infinity"};

// Python's bare NaN / Infinity / -Infinity, which simdjson rightly refuses, as the strings "NaN",
// "Infinity" and "-Infinity". Outside strings JSON has no other word starting with N, I or -I, so no
// valid document changes.
std::string quote_nonfinite_tokens(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size();) {
    if (json[i] == '"') {  // a string, copied whole: its escapes may hide a quote
      const std::size_t start = i++;
      while (i < json.size() && json[i] != '"') i += json[i] == '\\' ? 2 : 1;
      i = std::min(i + 1, json.size());
      out.append(json.substr(start, i - start));
      continue;
    }
    bool quoted = false;
    for (std::string_view token : kNonFiniteTokens)
      if (starts_with(json.substr(i), token)) {
        out += '"';
        out += token;
        out += '"';
        i += token.size();
        quoted = true;
        break;
      }
    if (!quoted) out += json[i++];
  }
  return out;
}

// A value of the document and where it is ("trials[2].measured"), so that an error names the field.
class Node {
 public:
  Node(simdjson::dom::element element, std::string where, const std::string& file)
      : element_(element), where_(std::move(where)), file_(file) {}

  bool is_null() const { return element_.is_null(); }

  Node at(std::string_view key) const {
    simdjson::dom::object object;
    if (element_.get(object) != simdjson::SUCCESS) fail("not an object");
    simdjson::dom::element member;
    if (object[key].get(member) != simdjson::SUCCESS)
      throw InputError(file_, fmt::format("{}: no \"{}\"", label(), key));
    return Node(member, where_.empty() ? std::string(key) : fmt::format("{}.{}", where_, key), file_);
  }
  std::optional<Node> nullable(std::string_view key) const {
    Node member = at(key);
    if (member.is_null()) return std::nullopt;
    return member;
  }

  std::string text() const {
    std::string_view s;
    if (element_.get(s) != simdjson::SUCCESS) fail("not a string");
    return std::string(s);
  }
  double number() const {
    double v = 0;
    if (element_.get(v) == simdjson::SUCCESS) return v;
    std::string_view s;
    if (element_.get(s) == simdjson::SUCCESS) {
      if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
      if (s == "Infinity") return std::numeric_limits<double>::infinity();
      if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    }
    fail("not a number");
  }
  bool boolean() const {
    bool v = false;
    if (element_.get(v) != simdjson::SUCCESS) fail("not true or false");
    return v;
  }
  std::vector<Node> items() const {
    simdjson::dom::array array;
    if (element_.get(array) != simdjson::SUCCESS) fail("not an array");
    std::vector<Node> out;
    out.reserve(array.size());
    for (simdjson::dom::element e : array) out.emplace_back(e, fmt::format("{}[{}]", where_, out.size()), file_);
    return out;
  }
  std::vector<std::string> texts() const {
    std::vector<std::string> out;
    for (const Node& n : items()) out.push_back(n.text());
    return out;
  }

  std::string text(std::string_view key) const { return at(key).text(); }
  double number(std::string_view key) const { return at(key).number(); }
  std::optional<double> nullable_number(std::string_view key) const {
    if (auto n = nullable(key)) return n->number();
    return std::nullopt;
  }
  std::optional<std::string> nullable_text(std::string_view key) const {
    if (auto n = nullable(key)) return n->text();
    return std::nullopt;
  }

 private:
  std::string label() const { return where_.empty() ? "the document" : where_; }
  [[noreturn]] void fail(std::string_view what) const { throw InputError(file_, fmt::format("{}: {}", label(), what)); }

  simdjson::dom::element element_;
  std::string where_;
  const std::string& file_;
};

OptimizeMeasured read_measured(const Node& n) {
  OptimizeMeasured m;
  if (auto k = n.nullable("kernel")) {
    m.kernel = OptimizeKernelTime{k->number("ns_per_step"), k->number("kernels_per_step"), k->number("steps"),
                                  k->text("database")};
  }
  const Node w = n.at("wall");
  m.wall = OptimizeWallTime{w.number("median_ms"), w.number("p25_ms"), w.number("p75_ms"), w.number("min_ms"),
                            w.number("max_ms"),    w.number("steps"),  w.text("clock")};
  return m;
}

OptimizeAgreement read_agreement(const Node& n) {
  return OptimizeAgreement{n.number("max_abs"),
                           n.number("max_rel"),
                           n.number("tensors"),
                           n.nullable_number("grad_max_abs"),
                           n.nullable_number("grad_max_rel"),
                           n.text("nonfinite")};
}

OptimizeFinding read_finding(const Node& n) {
  return OptimizeFinding{n.text("rule"), n.nullable_text("rewrite"), n.at("evidence").texts()};
}

OptimizeTrial read_trial(const Node& n) {
  OptimizeTrial t;
  t.rewrite = n.text("rewrite");
  t.together_with = n.at("together_with").texts();
  t.tier = n.text("tier");
  t.mechanism = n.text("mechanism");
  t.verdict = n.text("verdict");
  t.reason = n.text("reason");
  t.changes = n.at("changes").texts();
  if (auto a = n.nullable("numerics")) t.numerics = read_agreement(*a);
  t.numerics_bound = n.nullable_number("numerics_bound");
  if (auto m = n.nullable("measured")) t.measured = read_measured(*m);
  t.kernel_speedup = n.nullable_number("kernel_speedup");
  t.wall_speedup = n.nullable_number("wall_speedup");
  return t;
}

OptimizeSpeedupSplit read_split(const Node& n) {
  return OptimizeSpeedupSplit{n.nullable_number("total"), n.nullable_number("exact_only"),
                              n.nullable_number("precision_factor"), n.nullable_number("precision_share")};
}

}  // namespace

OptimizeReport parse_optimize_report(std::string_view json, const std::string& file) {
  const std::string text = quote_nonfinite_tokens(json);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (simdjson::error_code err = parser.parse(text).get(doc))
    throw InputError(file, std::string("malformed JSON: ") + simdjson::error_message(err));
  const Node root(doc, "", file);
  OptimizeReport r;
  r.workload = root.text("workload");
  r.compile = root.text("compile");
  r.train = root.at("train").boolean();
  r.allow_precision = root.nullable_text("allow_precision");
  r.tolerance = root.number("tolerance");
  r.exact_tolerance = root.number("exact_tolerance");
  r.evidence_profile = root.text("evidence_profile");
  r.baseline = read_measured(root.at("baseline"));
  r.noise = read_agreement(root.at("noise"));
  for (const Node& f : root.at("findings").items()) r.findings.push_back(read_finding(f));
  for (const Node& t : root.at("trials").items()) r.trials.push_back(read_trial(t));
  r.applied = root.at("applied").texts();
  r.final = read_measured(root.at("final"));
  r.exact_only = read_measured(root.at("exact_only"));
  const Node speedup = root.at("speedup");
  r.kernel_speedup = read_split(speedup.at("kernel"));
  r.wall_speedup = read_split(speedup.at("wall"));
  r.saved_code = root.nullable_text("saved_code").value_or("");
  return r;
}

OptimizeReport read_optimize_report(const std::string& path) { return parse_optimize_report(read_file(path), path); }

}  // namespace opprof
