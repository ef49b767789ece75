// opprof_trace_dump: prints what an opprof tracer log holds, record by record, for checking a capture by
// eye or from a script. Output is "key=value" lines:
//   records.<type>=N            counts per record type
//   first: ...                  the first --first records, one line each
//   summary kernels=.. graph_kernels=.. graph_kernels_with_stack=.. ...
//   stack kernel=<mangled> node=<id> stack=a>b>c   (one per distinct graph kernel name, capture-time stack)
// With opprof_core linked in (the normal build), also what read_tracer_log makes of it:
//   timeline kernels=.. launches=.. thread_ranges=.. stream_ranges=.. operator=.. module=.. annotation=..
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

#include "tracer_log/decoder.hpp"
#ifdef OPPROF_DUMP_WITH_TIMELINE
#include "opprof/ingest/tracer_log.hpp"
#endif

namespace {

using namespace opprof::tracelog;

int usage() {
  std::fprintf(stderr, "usage: opprof_trace_dump LOG [--first N]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string path = argv[1];
  long first = 20;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--first") == 0 && i + 1 < argc) {
      first = std::strtol(argv[++i], nullptr, 10);
    } else {
      return usage();
    }
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", path.c_str());
    return 1;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, std::uint64_t> counts;
  std::unordered_map<std::uint32_t, std::string> strings;
  std::unordered_map<std::uint64_t, std::vector<StackEntry>> node_stacks;
  std::unordered_map<std::uint64_t, std::uint64_t> clone_of;
  std::vector<KernelRecord> kernels;
  // Every graph-related record, bounded: what ids the driver and CUPTI gave, for diagnosing the mapping.
  constexpr std::size_t kMaxGraphLines = 48;
  std::vector<std::string> graph_detail;
  auto graph_line = [&](const std::string& line) {
    if (graph_detail.size() < kMaxGraphLines) graph_detail.push_back("graph: " + line);
  };
  std::vector<Record> firsts;  // printed once every string is known
  try {
    RecordDecoder decoder(bytes);
    const FileHeader& header = decoder.header();
    std::printf("header version=%u.%u pid=%u flags=%u cupti_start_ns=%llu steady_start_ns=%llu bytes=%zu\n",
                header.major, header.minor, header.pid, header.flags,
                static_cast<unsigned long long>(header.cupti_start_ns),
                static_cast<unsigned long long>(header.steady_start_ns), bytes.size());
    Record r;
    while (decoder.next(&r)) {
      ++counts[record_type_name(r.type)];
      std::visit(
          Visitor{
              [&](const StringEntry& s) { strings[s.id].assign(s.text); },
              [&](const KernelRecord& k) {
                kernels.push_back(k);
                if (k.graph_node_id != 0)
                  graph_line("kernel node=" + std::to_string(k.graph_node_id) + " graph=" + std::to_string(k.graph_id) +
                             " corr=" + std::to_string(k.correlation_id));
              },
              [&](const GraphNode& g) {
                graph_line("node id=" + std::to_string(g.fixed.node_id) + " graph=" + std::to_string(g.fixed.graph_id) +
                           " type=" + std::to_string(g.fixed.node_type) + " depth=" + std::to_string(g.fixed.depth) +
                           " tid=" + std::to_string(g.fixed.tid));
                if (!g.stack.empty() || node_stacks.count(g.fixed.node_id) == 0) node_stacks[g.fixed.node_id] = g.stack;
              },
              [&](const GraphNodeCloneRecord& c) {
                graph_line("clone id=" + std::to_string(c.node_id) + " graph=" + std::to_string(c.graph_id) +
                           " of id=" + std::to_string(c.original_node_id) + " graph=" + std::to_string(c.original_graph_id));
                if (c.node_id != c.original_node_id) clone_of[c.node_id] = c.original_node_id;
              },
              [&](const GraphExecRecord& e) {
                graph_line("exec id=" + std::to_string(e.exec_id) + " graph=" + std::to_string(e.graph_id));
              },
              [&](const CaptureLaunch& c) {
                graph_line("capture_launch node=" + std::to_string(c.fixed.node_id) + " capture=" +
                           std::to_string(c.fixed.capture_id) + " graph=" + std::to_string(c.fixed.graph_id) + " cbid=" +
                           std::to_string(c.fixed.cbid) + " domain=" + std::to_string(c.fixed.domain) + " depth=" +
                           std::to_string(c.fixed.depth) + " named=" + (c.fixed.name_sid != 0 ? "1" : "0"));
                if (c.fixed.node_id != 0 && !c.stack.empty()) node_stacks[c.fixed.node_id] = c.stack;
              },
              [](const auto&) {},
          },
          r.value);
      if (static_cast<long>(firsts.size()) < first && !std::holds_alternative<StringEntry>(r.value)) firsts.push_back(r);
    }
    for (const auto& [name, n] : counts)
      std::printf("records.%s=%llu\n", name.c_str(), static_cast<unsigned long long>(n));
    if (decoder.truncated()) std::printf("warning truncated_at=%zu\n", decoder.truncated_at());
  } catch (const FormatError& e) {
    std::fprintf(stderr, "%s: byte %zu: %s\n", path.c_str(), e.offset(), e.what());
    return 1;
  }

  auto str = [&](std::uint32_t id) -> std::string {
    auto it = strings.find(id);
    return it == strings.end() ? std::string() : it->second;
  };
  for (const Record& r : firsts) {
    std::visit(
        Visitor{
            [&](const KernelRecord& k) {
              std::printf("first: kernel %s dur_ns=%lld stream=%u corr=%u grid=%d,%d,%d block=%d,%d,%d graph=%u node=%llu\n",
                          str(k.name_sid).c_str(), static_cast<long long>(k.end_ns - k.start_ns), k.stream_id,
                          k.correlation_id, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, k.graph_id,
                          static_cast<unsigned long long>(k.graph_node_id));
            },
            [&](const NvtxPushRecord& e) {
              std::printf("first: push \"%s\" domain=\"%s\" tid=%llu payload=%u ts=%llu\n", str(e.text_sid).c_str(),
                          str(e.domain_sid).c_str(), static_cast<unsigned long long>(e.tid), e.payload,
                          static_cast<unsigned long long>(e.ts_ns));
            },
            [&](const ApiCallRecord& a) {
              std::printf("first: api domain=%u cbid=%u corr=%u tid=%llu dur_ns=%lld\n", a.domain, a.cbid,
                          a.correlation_id, static_cast<unsigned long long>(a.tid),
                          static_cast<long long>(a.end_ns - a.start_ns));
            },
            [&](const ApiNameRecord& a) {
              std::printf("first: api_name domain=%u cbid=%u %s\n", a.domain, a.cbid, str(a.name_sid).c_str());
            },
            [&](const GraphNode& g) {
              std::printf("first: graph_node graph=%u node=%llu type=%u depth=%u\n", g.fixed.graph_id,
                          static_cast<unsigned long long>(g.fixed.node_id), g.fixed.node_type, g.fixed.depth);
            },
            [&](const DeviceRecord& d) {
              std::printf("first: device %u \"%s\" sm=%u cc=%u.%u\n", d.device_id, str(d.name_sid).c_str(), d.sm_count,
                          d.cc_major, d.cc_minor);
            },
            [&](const auto&) { std::printf("first: %s\n", record_type_name(r.type)); },
        },
        r.value);
  }

  // Graph-launched kernels and the capture-time stack their node (or the node it was cloned from) had.
  std::size_t graph_kernels = 0, with_stack = 0;
  std::set<std::string> shown;
  for (const KernelRecord& k : kernels) {
    if (k.graph_node_id == 0) continue;
    ++graph_kernels;
    std::uint64_t node = k.graph_node_id;
    const std::vector<StackEntry>* stack = nullptr;
    for (int hop = 0; hop < 64 && stack == nullptr; ++hop) {
      if (auto it = node_stacks.find(node); it != node_stacks.end() && !it->second.empty()) {
        stack = &it->second;
      } else if (auto c = clone_of.find(node); c != clone_of.end()) {
        node = c->second;
      } else {
        break;
      }
    }
    if (stack == nullptr || stack->empty()) continue;
    ++with_stack;
    std::string name = str(k.name_sid);
    if (!shown.insert(name).second) continue;
    std::string chain;
    for (const StackEntry& e : *stack) chain += (chain.empty() ? "" : ">") + str(e.text_sid);
    std::printf("stack kernel=%s node=%llu stack=%s\n", name.c_str(),
                static_cast<unsigned long long>(k.graph_node_id), chain.c_str());
  }
  for (const std::string& line : graph_detail) std::printf("%s\n", line.c_str());
  // graph_kernels_with_stack: by node ids only (the reader adds the launch-order route: meta graph.*).
  std::printf("summary kernels=%zu graph_kernels=%zu graph_kernels_with_stack=%zu strings=%zu\n", kernels.size(),
              graph_kernels, with_stack, strings.size());

#ifdef OPPROF_DUMP_WITH_TIMELINE
  try {
    opprof::Timeline tl = opprof::read_tracer_log(path);
    std::size_t thread_ranges = 0, stream_ranges = 0;
    std::map<std::string, std::size_t> by_kind;
    for (std::size_t i = 0; i < tl.ranges.size(); ++i) {
      (tl.ranges.scope(i) == opprof::RangeScope::kStream ? stream_ranges : thread_ranges)++;
      ++by_kind[opprof::to_string(tl.ranges.kind[i])];
    }
    std::printf("timeline kernels=%zu launches=%zu thread_ranges=%zu stream_ranges=%zu", tl.kernels.size(),
                tl.launches.size(), thread_ranges, stream_ranges);
    for (const auto& [kind, n] : by_kind) std::printf(" %s=%zu", kind.c_str(), n);
    std::printf("\n");
    for (const auto& [key, value] : tl.metadata) std::printf("meta %s=%s\n", key.c_str(), value.c_str());
    // Ranges per NVTX domain, and the capture-time stack each graph kernel got (its stream ranges).
    std::map<std::string, std::size_t> by_domain;
    for (std::size_t i = 0; i < tl.ranges.size(); ++i)
      if (tl.ranges.domain[i] != opprof::kNoString) ++by_domain[std::string(tl.str(tl.ranges.domain[i]))];
    for (const auto& [domain, n] : by_domain) std::printf("timeline domain=\"%s\" ranges=%zu\n", domain.c_str(), n);
    std::map<std::tuple<std::uint32_t, std::int64_t, std::int64_t>, std::vector<std::size_t>> stream_ranges_at;
    for (std::size_t i = 0; i < tl.ranges.size(); ++i)
      if (tl.ranges.scope(i) == opprof::RangeScope::kStream)
        stream_ranges_at[{static_cast<std::uint32_t>(tl.ranges.owner(i)), tl.ranges.start_ns[i], tl.ranges.end_ns[i]}]
            .push_back(i);
    std::set<std::string> stack_shown;
    for (std::size_t i = 0; i < tl.kernels.size() && stack_shown.size() < 8; ++i) {
      if (tl.kernels.graph_node[i] == 0) continue;
      auto it = stream_ranges_at.find({tl.kernels.stream[i], tl.kernels.start_ns[i], tl.kernels.end_ns[i]});
      if (it == stream_ranges_at.end()) continue;
      std::vector<std::size_t> rows = it->second;
      std::sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) { return tl.ranges.depth[a] < tl.ranges.depth[b]; });
      std::string chain;
      for (std::size_t r : rows) chain += (chain.empty() ? "" : ">") + std::string(tl.str(tl.ranges.text[r]));
      const std::string name(tl.str(tl.kernels.name[i]));
      if (stack_shown.insert(name).second)
        std::printf("timeline graph_stack kernel=\"%.80s\" stack=%s\n", name.c_str(), chain.c_str());
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < tl.kernels.size() && names.size() < 8; ++i)
      if (names.insert(std::string(tl.str(tl.kernels.name[i]))).second)
        std::printf("timeline kernel name=\"%s\"\n", std::string(tl.str(tl.kernels.name[i])).c_str());
    std::set<std::string> texts;
    for (std::size_t i = 0; i < tl.ranges.size() && texts.size() < 12; ++i)
      if (texts.insert(std::string(tl.str(tl.ranges.text[i]))).second)
        std::printf("timeline range kind=%s scope=%s text=\"%s\" domain=\"%s\"\n", opprof::to_string(tl.ranges.kind[i]),
                    tl.ranges.scope(i) == opprof::RangeScope::kStream ? "stream" : "thread",
                    std::string(tl.str(tl.ranges.text[i])).c_str(), std::string(tl.str(tl.ranges.domain[i])).c_str());
  } catch (const std::exception& e) {
    std::printf("timeline error=\"%s\"\n", e.what());
    return 1;
  }
#endif
  return 0;
}
