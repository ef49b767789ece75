#include "opprof/job/processes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

#include "contract/opprof_contract.h"
#include "opprof/util/simdjson_dom.hpp"
#include "opprof/util/text.hpp"

namespace fs = std::filesystem;

namespace opprof {
namespace {

std::optional<std::int64_t> number_after(std::string_view name, std::string_view prefix) {
  if (!starts_with(name, prefix) || name.size() == prefix.size()) return std::nullopt;
  std::int64_t v = 0;
  const char* end = name.data() + name.size();
  auto [p, ec] = std::from_chars(name.data() + prefix.size(), end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// What a capture record (capture.json, capture_counters.json) says about its process.
struct Record {
  bool present = false;
  std::int64_t pid = 0, rank = kNoRank, local_rank = kNoRank, world_size = kNoRank;
  std::string status, error;
  std::string window_backend;  // window_info.backend: what the window recorded with
};

std::int64_t int_or(simdjson::dom::element process, const char* key) {
  std::int64_t v = kNoRank;
  if (process[key].get_int64().get(v) != simdjson::SUCCESS) return kNoRank;
  return v;
}

Record read_record(const fs::path& path) {
  Record r;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (!fs::exists(path) || parser.load(path.string()).get(doc) != simdjson::SUCCESS) return r;
  r.present = true;
  std::string_view text;
  if (doc["status"].get_string().get(text) == simdjson::SUCCESS) r.status = text;
  if (doc["error"]["message"].get_string().get(text) == simdjson::SUCCESS) r.error = text;
  if (doc["window_info"]["backend"].get_string().get(text) == simdjson::SUCCESS) r.window_backend = text;
  simdjson::dom::element process;
  if (doc["process"].get(process) == simdjson::SUCCESS) {
    r.pid = int_or(process, "pid");
    r.rank = int_or(process, "rank");
    r.local_rank = int_or(process, "local_rank");
    r.world_size = int_or(process, "world_size");
  }
  return r;
}

}  // namespace

std::string JobProcess::label() const {
  if (rank != kNoRank) return fmt::format("rank {}", rank);
  return fmt::format("pid {}", pid);
}

std::vector<JobProcess> find_job_processes(const fs::path& dir, std::string_view trace_file) {
  std::vector<JobProcess> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    const auto rank = number_after(name, OPPROF_RANK_DIR_PREFIX);
    const auto pid = number_after(name, OPPROF_PROCESS_DIR_PREFIX);
    if (!rank && !pid) continue;
    JobProcess p;
    p.folder = name;
    const Record a = read_record(entry.path() / OPPROF_CAPTURE_RECORD_FILE);
    const Record b = read_record(entry.path() / OPPROF_COUNTERS_RECORD_FILE);
    p.rank = rank ? *rank : a.rank;
    p.local_rank = a.local_rank;
    p.world_size = a.present ? a.world_size : b.world_size;
    p.pid = static_cast<std::uint32_t>(a.pid > 0 ? a.pid : pid.value_or(0));
    p.counters_pid = static_cast<std::uint32_t>(std::max<std::int64_t>(b.pid, 0));
    if (b.present && !b.window_backend.empty())
      p.counters_window = b.window_backend == OPPROF_WINDOW_BACKEND_NONE ? CountersWindow::kNotOpened
                                                                         : CountersWindow::kOpened;
    const std::vector<std::string_view> candidates =
        trace_file.empty() ? std::vector<std::string_view>{OPPROF_TRACER_TRACE_FILE, OPPROF_TORCH_TRACE_FILE}
                           : std::vector<std::string_view>{trace_file};
    for (std::string_view file : candidates)
      if (const fs::path t = entry.path() / std::string(file); p.trace.empty() && fs::exists(t)) p.trace = t.string();
    if (const fs::path i = entry.path() / OPPROF_INDUCTOR_DIR; fs::is_directory(i)) p.inductor = i.string();
    if (p.trace.empty()) {
      p.status = "missing";
      p.problem = fmt::format("no timeline ({} not written)",
                              (fs::path(name) / std::string(trace_file.empty() ? OPPROF_TRACER_TRACE_FILE : trace_file)).string());
    } else if (a.status == "error") {
      p.problem = "the workload failed in this process" + (a.error.empty() ? std::string() : ": " + a.error);
    }
    out.push_back(std::move(p));
  }
  // Ranks of the world that left no folder at all.
  std::int64_t world = kNoRank;
  std::set<std::int64_t> ranks;
  for (const JobProcess& p : out) {
    world = std::max(world, p.world_size);
    if (p.rank != kNoRank) ranks.insert(p.rank);
  }
  for (std::int64_t r = 0; r < world; ++r) {
    if (ranks.count(r)) continue;
    JobProcess p;
    p.rank = r;
    p.world_size = world;
    p.status = "missing";
    p.problem = fmt::format("no capture folder {}{} although the world size is {}", OPPROF_RANK_DIR_PREFIX, r, world);
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const JobProcess& x, const JobProcess& y) {
    const bool xr = x.rank != kNoRank, yr = y.rank != kNoRank;
    if (xr != yr) return xr;
    return xr ? x.rank < y.rank : x.pid < y.pid;
  });
  return out;
}

}  // namespace opprof
