#include "cli/progress_printer.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>

#include "opprof/util/text.hpp"

namespace opprof::cli {
namespace {
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
}  // namespace

ProgressPrinter::ProgressPrinter(bool quiet) : quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0) {}

void ProgressPrinter::say(const std::string& line) const {
  if (!quiet_) fmt::print(stderr, "opprof: {}\n", line);
}

void ProgressPrinter::end_line() {
  if (partial_line_ && !quiet_) fmt::print(stderr, "\n");
  partial_line_ = false;
}

void ProgressPrinter::on_attribute(const AttributeEvent& event) {
  std::visit(
      Overloaded{
          [&](const progress::TraceBytes& e) {
            if (quiet_ || e.total == 0) return;
            const double pct = std::min(100.0, 100.0 * double(e.done) / double(e.total));
            if (tty_) {
              fmt::print(stderr, "\ropprof: reading trace {:.0f} MB ({:.0f}% of the file)", double(e.done) / 1e6, pct);
              partial_line_ = true;
            } else if (pct >= next_pct_) {
              fmt::print(stderr, "opprof: reading trace {:.0f} MB ({:.0f}% of the file)\n", double(e.done) / 1e6, pct);
              next_pct_ = pct + 25;
            }
          },
          [&](const progress::TraceRead& e) {
            end_line();
            say(fmt::format("read {} events ({}, {:.0f} MB) in {:.2f} s: {} GPU activities, {} launches, {} ranges",
                            e.events, to_string(e.format), double(e.bytes) / 1e6, e.seconds, e.kernels, e.launches,
                            e.ranges));
          },
          [&](const progress::InductorRead& e) {
            say(fmt::format("read {} Inductor graph(s) and {} FX module map(s) in {:.2f} s", e.graphs, e.module_maps,
                            e.seconds));
          },
          [&](const progress::NcuRead& e) {
            say(fmt::format("read {} ncu rows with {} metric columns in {:.2f} s", e.rows, e.metric_columns, e.seconds));
          },
          [&](const progress::Attributed& e) {
            say(fmt::format("attributed {} GPU activities in {:.2f} s ({:.1f} M/s)", e.kernels, e.seconds,
                            e.seconds > 0 ? double(e.kernels) / e.seconds / 1e6 : 0.0));
          },
          [&](const progress::Matched& e) {
            say(fmt::format("matched {} of {} ncu rows to kernels in {:.2f} s ({} rows and {} kernels unmatched)",
                            e.matched, e.rows, e.seconds, e.unmatched_rows, e.unmatched_kernels));
          },
          [&](const progress::MissingMetric& e) {
            say(fmt::format("warning: the ncu CSV has no column for metric {} of the set", e.name));
          },
          [&](const progress::Warning& e) {
            // Not progress: -q keeps it.
            end_line();
            fmt::print(stderr, "opprof: warning: {}\n", e.text);
          },
          [&](const progress::Written& e) {
            say(fmt::format("wrote {} in {:.2f} s (total {:.2f} s): {:.1f}% of kernel time attributed to operators, "
                            "{:.1f}% to modules",
                            e.path, e.seconds, e.total_seconds, e.attributed_pct, e.module_attributed_pct));
          },
      },
      event);
}

void ProgressPrinter::on_profile(const ProfileEvent& event) {
  using std::chrono::steady_clock;
  std::visit(
      Overloaded{
          [&](const progress::Notice& e) { say(e.text); },
          [&](const progress::PassStarted& e) {
            if (e.kind == PassKind::kTimeline) say("pass A (timeline): " + join(e.argv, " "));
            if (e.kind == PassKind::kCounters) {
              std::vector<std::string> shown = e.argv;  // the metric list is the set's names: counted, not listed
              for (std::size_t i = 1; i < shown.size(); ++i)
                if (shown[i - 1] == "--metrics") shown[i] = fmt::format("({} names)", e.metrics);
              say(fmt::format("pass B (ncu, {} metrics, {} kernels expected): {}", e.metrics, e.expected_kernels,
                              join(shown, " ")));
            }
            last_ncu_print_ = steady_clock::now();
          },
          [&](const progress::PassOutput& e) {
            if (e.kind == PassKind::kTimeline && !quiet_) fmt::print(stderr, "  [pass A] {}\n", e.line);
            if (e.kind == PassKind::kCsvExport) say(e.line);
          },
          [&](const progress::NcuStatus& e) {
            // On a terminal the status line rewrites itself twice a second; in a log, a line every 10 seconds.
            const auto every = tty_ ? std::chrono::milliseconds(500) : std::chrono::milliseconds(10000);
            const auto now = steady_clock::now();
            if (quiet_ || (now - last_ncu_print_ <= every && e.profiled != e.expected)) return;
            if (tty_)
              fmt::print(stderr, "\ropprof: pass B (ncu): {}   ", e.status);
            else
              fmt::print(stderr, "opprof: pass B (ncu): {}\n", e.status);
            last_ncu_print_ = now;
          },
          [&](const progress::PassEnded& e) {
            if (e.kind == PassKind::kCounters && !quiet_ && tty_) fmt::print(stderr, "\n");
          },
          [&](const progress::WallTime& e) {
            say(fmt::format("wall time: pass A {:.1f} s, pass B {} s, attribution {:.1f} s", e.pass_a_s,
                            e.pass_b_s ? fmt::format("{:.2f}", *e.pass_b_s) : "-", e.attribute_s));
          },
      },
      event);
}

}  // namespace opprof::cli
