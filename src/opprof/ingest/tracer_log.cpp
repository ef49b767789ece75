#include "opprof/ingest/tracer_log.hpp"
#include "opprof/ingest/tracer_log_detail.hpp"

#include <cxxabi.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "opprof/ingest/communication_args.hpp"
#include "opprof/ingest/mapped_file.hpp"
#include "tracer_log/decoder.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

RangeKind classify_nvtx_range(std::string_view text, std::string_view domain, std::int64_t category,
                              std::string_view* kept) {
  *kept = text;
  if (starts_with(text, kModuleRangePrefix)) {
    *kept = text.substr(kModuleRangePrefix.size());
    return RangeKind::kModule;
  }
  // Dynamo opens its region with a RecordFunction of the function scope (_RecordFunctionFast): a region
  // by its text, whatever the observer's category says.
  if (starts_with(text, kCompiledRegionPrefix)) return RangeKind::kCompiledRegion;
  const bool observer = category >= 0 && domain == kTorchObserverDomain;
  if (observer && category != kTorchUserScopeCategory) return RangeKind::kOperator;
  // torch/csrc/profiler/util.cpp getNvtxStr: name, then ", seq = N", ", op_id = N", ", sizes = [...]",
  // ", input_op_ids = [...]", each present or not, in that order.
  constexpr std::string_view kSuffixes[] = {", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "};
  std::size_t cut = std::string_view::npos;
  for (std::string_view s : kSuffixes) cut = std::min(cut, text.find(s));
  if (cut != std::string_view::npos && cut > 0) *kept = text.substr(0, cut);
  // A compiled graph's call and Dynamo's region are regions, not operators, also when emit_nvtx wrote them.
  if (starts_with(text, kCompiledGraphCallPrefix)) return RangeKind::kCompiledRegion;
  if (cut != std::string_view::npos && cut > 0) return RangeKind::kOperator;
  if (observer) return RangeKind::kAnnotation;
  const std::size_t ns = text.find("::");
  if (ns != std::string_view::npos && ns > 0 && ns + 2 < text.size() &&
      text.find_first_of(" \t") == std::string_view::npos)
    return RangeKind::kOperator;
  return RangeKind::kAnnotation;
}

namespace {

using namespace tracelog;

using detail::MappedFile;

// The vectors the bulk records are decoded into (kernels, copies, fills, API calls, NVTX events): resized
// without zeroing, so that the thread decoding a part of the log is the first to touch its slots (the page
// faults land on the threads, not all on the one that sizes the vectors) and no slot is written twice.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <class T>
using Slots = std::vector<T, UninitializedAllocator<T>>;

// Trivially constructible (no default member initialisers), so that resizing a Slots of them writes nothing.
struct NvtxEvent {
  enum Kind : std::uint8_t { kPush, kPop, kStart, kEnd, kMark } kind;
  std::uint64_t ts;
  std::uint64_t tid;
  std::uint64_t range_id;
  std::uint32_t text_sid;
  std::uint32_t domain_sid;
  std::uint32_t category;
  std::uint32_t payload;  // NvtxPushRecord::payload; 0 for the other kinds
};
static_assert(std::is_trivially_default_constructible_v<NvtxEvent>);

// The events' indices, thread by thread (by thread id) and in time order within a thread: the order a stable
// sort of the events by (thread, time) gives, found without moving them. The log holds each thread's events in
// time order already (a thread's buffer is written in order), so this is a counting sort by thread and a check
// per thread; a thread whose events are out of order is sorted stably.
std::vector<std::uint32_t> thread_time_order(const Slots<NvtxEvent>& events) {
  // Threads are few and their events come in runs: a run's thread is looked up once.
  std::vector<std::pair<std::uint64_t, std::size_t>> threads;  // (thread, events), by thread
  auto thread_index = [&](std::uint64_t tid) {
    return static_cast<std::size_t>(
        std::lower_bound(threads.begin(), threads.end(), std::pair{tid, std::size_t{0}}) - threads.begin());
  };
  std::size_t* count = nullptr;
  std::uint64_t run_tid = 0;
  for (const NvtxEvent& e : events) {
    if (!count || e.tid != run_tid) {
      std::size_t t = thread_index(e.tid);
      if (t == threads.size() || threads[t].first != e.tid)
        threads.insert(threads.begin() + static_cast<std::ptrdiff_t>(t), {e.tid, 0});
      count = &threads[t].second;
      run_tid = e.tid;
    }
    ++*count;
  }
  std::vector<std::size_t> begin(threads.size() + 1, 0);  // each thread's first slot in order
  for (std::size_t t = 0; t < threads.size(); ++t) begin[t + 1] = begin[t] + threads[t].second;
  std::vector<std::size_t> next(begin.begin(), begin.end() - 1);
  std::vector<std::uint32_t> order(events.size());
  std::size_t* slot = nullptr;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!slot || events[i].tid != run_tid) {
      slot = &next[thread_index(events[i].tid)];
      run_tid = events[i].tid;
    }
    order[(*slot)++] = static_cast<std::uint32_t>(i);
  }
  const auto by_time = [&](std::uint32_t a, std::uint32_t b) { return events[a].ts < events[b].ts; };
  for (std::size_t t = 0; t < threads.size(); ++t) {
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(begin[t]);
    const auto last = order.begin() + static_cast<std::ptrdiff_t>(begin[t + 1]);
    if (!std::is_sorted(first, last, by_time)) std::stable_sort(first, last, by_time);
  }
  return order;
}

struct WindowEvent {
  std::uint64_t ts;
  std::uint64_t tid;
  bool start;
};

// Everything the records say, before it becomes timeline rows.
struct Parsed {
  FileHeader header{};
  std::vector<std::string_view> strings;  // by string id
  Slots<KernelRecord> kernels;
  Slots<MemcpyRecord> memcpys;
  Slots<MemsetRecord> memsets;
  Slots<ApiCallRecord> api_calls;
  std::unordered_map<std::uint64_t, std::uint32_t> api_names;  // (domain << 32 | cbid) -> name sid
  Slots<NvtxEvent> nvtx;
  std::uint64_t marks = 0;
  std::vector<WindowEvent> windows;
  // Capture-time stacks by graph node id. Several records may name one node (its GRAPHNODE_CREATED, a
  // CREATED of the same id during instantiation outside any range, a CaptureLaunch record): a non-empty
  // stack is never replaced by an empty one, and a CaptureLaunch stack (taken at the launch itself) wins.
  std::unordered_map<std::uint64_t, std::vector<StackEntry>> node_stacks;
  std::unordered_map<std::uint64_t, std::uint64_t> clone_of;
  std::unordered_map<std::uint32_t, std::uint32_t> graph_clone_of;  // cloned graph id -> original graph id
  std::unordered_map<std::uint32_t, std::uint32_t> exec_graph;      // exec id -> graph it was instantiated from
  struct CaptureLaunch {
    std::uint64_t capture_id;
    std::uint64_t ts;
    std::uint32_t graph_id;
    std::uint32_t name_sid;
    std::vector<StackEntry> stack;
  };
  std::vector<CaptureLaunch> capture_launches;
  std::vector<DeviceRecord> devices;
  std::uint64_t cupti_dropped = 0;
  std::uint64_t pool_exhausted = 0;
  bool has_trailer = false;
  TrailerRecord trailer{};
  std::uint64_t unknown_records = 0;
  std::int64_t max_ts = 0;
  bool truncated = false;
  std::size_t truncated_at = 0;

  void saw(std::uint64_t ts) { max_ts = std::max(max_ts, static_cast<std::int64_t>(ts)); }
};

InputPosition at_byte(std::size_t offset) {
  InputPosition p;
  p.byte_offset = offset;
  p.known = true;
  return p;
}

// The records decoded in parts on several threads, each kind into a vector of its own: all but a few records
// of a log. The others are decoded in file order while the headers are walked (parse).
enum BulkKind : int { kKernels, kMemcpys, kMemsets, kApiCalls, kNvtxEvents, kBulkKinds };

int bulk_kind(std::uint16_t type) {
  switch (static_cast<RecordType>(type)) {
    case RecordType::kKernel: return kKernels;
    case RecordType::kMemcpy: return kMemcpys;
    case RecordType::kMemset: return kMemsets;
    case RecordType::kApiCall: return kApiCalls;
    case RecordType::kNvtxPush:
    case RecordType::kNvtxPop:
    case RecordType::kNvtxStart:
    case RecordType::kNvtxEnd:
    case RecordType::kNvtxMark: return kNvtxEvents;
    default: return -1;
  }
}

// The next slot of each bulk vector that one part of the log fills, and what the part saw.
struct BulkSlots {
  KernelRecord* kernel;
  MemcpyRecord* memcpy;
  MemsetRecord* memset;
  ApiCallRecord* api_call;
  NvtxEvent* nvtx;
  std::uint64_t marks = 0;
  std::int64_t max_ts = 0;

  void saw(std::uint64_t ts) { max_ts = std::max(max_ts, static_cast<std::int64_t>(ts)); }
};

// Puts a bulk record into its slot; other records are left to collect_in_order.
void put_bulk(BulkSlots& s, const RecordValue& record) {
  std::visit(
      Visitor{
          [&](const KernelRecord& k) {
            *s.kernel++ = k;
            s.saw(k.start_ns);
            s.saw(k.end_ns);
          },
          [&](const MemcpyRecord& m) {
            *s.memcpy++ = m;
            s.saw(m.end_ns);
          },
          [&](const MemsetRecord& m) {
            *s.memset++ = m;
            s.saw(m.end_ns);
          },
          [&](const ApiCallRecord& a) {
            *s.api_call++ = a;
            s.saw(a.start_ns);
            s.saw(a.end_ns);
          },
          [&](const NvtxPushRecord& e) {
            *s.nvtx++ = NvtxEvent{NvtxEvent::kPush, e.ts_ns, e.tid, 0, e.text_sid, e.domain_sid, e.category, e.payload};
            s.saw(e.ts_ns);
          },
          [&](const NvtxPopRecord& e) {
            *s.nvtx++ = NvtxEvent{NvtxEvent::kPop, e.ts_ns, e.tid, 0, 0, e.domain_sid, 0, 0};
            s.saw(e.ts_ns);
          },
          [&](const NvtxStartRecord& e) {
            *s.nvtx++ = NvtxEvent{NvtxEvent::kStart, e.ts_ns, e.tid, e.range_id, e.text_sid, e.domain_sid, e.category, 0};
            s.saw(e.ts_ns);
          },
          [&](const NvtxEndRecord& e) {
            *s.nvtx++ = NvtxEvent{NvtxEvent::kEnd, e.ts_ns, e.tid, e.range_id, 0, 0, 0, 0};
            s.saw(e.ts_ns);
          },
          [&](const NvtxMarkRecord& e) {
            ++s.marks;
            // Kept for the communication marks (communication_args.hpp), applied to the range open
            // around them; other marks name no range.
            *s.nvtx++ = NvtxEvent{NvtxEvent::kMark, e.ts_ns, e.tid, 0, e.text_sid, e.domain_sid, 0, 0};
          },
          [](const auto&) {},
      },
      record);
}

// Collects what the records other than the bulk ones say, in file order: some depend on the order of others
// (a node's stack, a string's text). The decoder has checked every size.
void collect_in_order(Parsed& p, const RecordDecoder& decoder, RecordValue& record) {
  std::visit(
      Visitor{
          [&](const StringEntry& s) {
            if (s.id >= p.strings.size())
              p.strings.resize(std::min<std::size_t>(std::max<std::size_t>(s.id + std::size_t{1}, p.strings.size() * 2),
                                                     decoder.max_string_id() + 1));
            p.strings[s.id] = s.text;
          },
          [&](const ApiNameRecord& a) { p.api_names[(std::uint64_t{a.domain} << 32) | a.cbid] = a.name_sid; },
          [&](const WindowStart& w) {
            p.windows.push_back(WindowEvent{w.fixed.ts_ns, w.fixed.tid, true});
            p.saw(w.fixed.ts_ns);
          },
          [&](const WindowStop& w) {
            p.windows.push_back(WindowEvent{w.fixed.ts_ns, w.fixed.tid, false});
            p.saw(w.fixed.ts_ns);
          },
          [&](GraphNode& g) {
            auto [it, inserted] = p.node_stacks.try_emplace(g.fixed.node_id, std::move(g.stack));  // moves only when inserted
            if (!inserted && it->second.empty() && !g.stack.empty()) it->second = std::move(g.stack);
          },
          [&](const GraphNodeCloneRecord& c) {
            if (c.node_id != c.original_node_id) p.clone_of[c.node_id] = c.original_node_id;
            if (c.graph_id != 0 && c.original_graph_id != 0 && c.graph_id != c.original_graph_id)
              p.graph_clone_of[c.graph_id] = c.original_graph_id;
          },
          [&](const GraphExecRecord& e) {
            if (e.exec_id != 0 && e.graph_id != 0) p.exec_graph[e.exec_id] = e.graph_id;
          },
          [&](CaptureLaunch& c) {
            if (c.fixed.node_id != 0 && !c.stack.empty()) p.node_stacks[c.fixed.node_id] = c.stack;
            p.capture_launches.push_back(
                Parsed::CaptureLaunch{c.fixed.capture_id, c.fixed.ts_ns, c.fixed.graph_id, c.fixed.name_sid, std::move(c.stack)});
          },
          [&](const DeviceRecord& d) { p.devices.push_back(d); },
          [&](const ThreadNameRecord&) {},
          [&](const CategoryNameRecord&) {},
          [&](const DroppedRecord& d) {
            p.cupti_dropped += d.cupti_dropped_records;
            p.pool_exhausted = std::max(p.pool_exhausted, d.pool_exhausted_requests);
          },
          [&](const TrailerRecord& t) {
            p.trailer = t;
            p.has_trailer = true;
          },
          [&](const UnknownRecord&) { ++p.unknown_records; },  // a newer writer's record: skip it
          [](const auto&) {},  // the bulk records: put_bulk
      },
      record);
}

// A run of whole records, and the slot its first record of each bulk kind takes.
struct LogPart {
  std::size_t begin;
  std::size_t end;
  std::array<std::size_t, kBulkKinds> first;
};

// Pages of the mapping are dropped every this many bytes decoded (MappedFile::drop_resident).
constexpr std::size_t kDropBytes = std::size_t{64} << 20;

// Decodes the bulk records of one part into their slots.
void decode_part(const RecordDecoder& decoder, const MappedFile& file, const LogPart& part, Parsed& p,
                 BulkSlots* slots) {
  RecordDecoder d = decoder;
  d.restrict_to(part.begin, part.end);
  *slots = BulkSlots{p.kernels.data() + part.first[kKernels], p.memcpys.data() + part.first[kMemcpys],
                     p.memsets.data() + part.first[kMemsets], p.api_calls.data() + part.first[kApiCalls],
                     p.nvtx.data() + part.first[kNvtxEvents]};
  Record r;
  std::size_t dropped = part.begin;
  while (d.next(&r)) {
    if (bulk_kind(r.type) >= 0) put_bulk(*slots, r.value);
    if (r.offset - dropped >= kDropBytes) dropped = file.drop_resident(dropped, r.offset);
  }
  file.drop_resident(dropped, part.end);
}

// Two passes. The first walks the record headers in file order: it counts the bulk records of each part
// (parts of about equal bytes, at record boundaries) and decodes every other record. The bulk vectors are then
// sized, and the parts decoded into them on as many threads, each into the slots the counts give it, so the
// vectors hold the records in file order whatever the threads. The walk stops before the first record that
// does not fit or does not decode; decoding from there afterwards says what is wrong (an error, or a log cut
// inside a record), after any error in the parts before it: the first error in the file is the one reported.
Parsed parse(const std::string& path, const MappedFile& file, const detail::TracerLogReadOptions& options) {
  Parsed p;
  try {
    const std::string_view log(file.data(), file.size());
    RecordDecoder decoder(log);
    p.header = decoder.header();

    const unsigned threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    std::size_t pos = decoder.header().header_bytes;
    const std::size_t part_bytes = std::max<std::size_t>({options.min_part_bytes, 1, (log.size() - pos) / threads + 1});
    std::vector<LogPart> parts;
    std::array<std::size_t, kBulkKinds> counts{};
    LogPart part{pos, pos, counts};
    std::size_t dropped = 0;
    RecordHeader rh;
    Record r;
    while (log.size() - pos >= sizeof rh) {
      std::memcpy(&rh, log.data() + pos, sizeof rh);
      if (rh.size > kMaxPayloadBytes || log.size() - pos - sizeof rh < rh.size) break;
      const std::size_t next = pos + sizeof rh + rh.size;
      if (const int kind = bulk_kind(rh.type); kind >= 0) {
        ++counts[static_cast<std::size_t>(kind)];
      } else {
        RecordDecoder one = decoder;
        one.restrict_to(pos, next);
        try {
          one.next(&r);
        } catch (const FormatError&) {
          break;  // decoded again from here below, after the parts before it
        }
        collect_in_order(p, one, r.value);
      }
      pos = next;
      if (pos - part.begin >= part_bytes) {
        part.end = pos;
        parts.push_back(part);
        part = LogPart{pos, pos, counts};
      }
      if (pos - dropped >= kDropBytes) dropped = file.drop_resident(dropped, pos);
    }
    part.end = pos;
    if (part.end > part.begin) parts.push_back(part);
    const std::size_t walked = pos;

    p.kernels.resize(counts[kKernels]);
    p.memcpys.resize(counts[kMemcpys]);
    p.memsets.resize(counts[kMemsets]);
    p.api_calls.resize(counts[kApiCalls]);
    p.nvtx.resize(counts[kNvtxEvents]);
    std::vector<BulkSlots> slots(parts.size());
    std::vector<std::exception_ptr> errors(parts.size());
    auto decode = [&](std::size_t i) {
      try {
        decode_part(decoder, file, parts[i], p, &slots[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    };
    {
      std::vector<std::thread> helpers;
      std::size_t started = 1;
      try {
        for (; started < parts.size(); ++started) helpers.emplace_back(decode, started);
      } catch (const std::system_error&) {
        // No thread to be had: this one decodes the parts no helper took.
      }
      if (!parts.empty()) decode(0);
      for (std::size_t i = started; i < parts.size(); ++i) decode(i);
      for (std::thread& t : helpers) t.join();
    }
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);  // the parts are in file order: the first is the earliest
    for (const BulkSlots& s : slots) {
      p.marks += s.marks;
      p.max_ts = std::max(p.max_ts, s.max_ts);
    }

    RecordDecoder tail = decoder;
    tail.restrict_to(walked, log.size());
    if (tail.next(&r))  // the walk stops only where the decoder throws or stops
      throw std::logic_error(fmt::format("tracer log: the walk over the records stopped before the record at byte {}", r.offset));
    p.truncated = tail.truncated();
    p.truncated_at = tail.truncated_at();
  } catch (const FormatError& e) {
    throw InputError(path, e.what(), at_byte(e.offset()));
  }
  return p;
}

std::string demangle(std::string_view mangled) {
  if (!starts_with(mangled, "_Z")) return std::string(mangled);
  std::string z(mangled);
  int status = 0;
  char* d = abi::__cxa_demangle(z.c_str(), nullptr, nullptr, &status);
  if (status != 0 || d == nullptr) return z;
  std::string out(d);
  std::free(d);
  return out;
}

const char* memcpy_name(std::uint8_t kind) {
  switch (kind) {
    case 1: return "Memcpy HtoD";
    case 2: return "Memcpy DtoH";
    case 3: return "Memcpy HtoA";
    case 4: return "Memcpy AtoH";
    case 5: return "Memcpy AtoA";
    case 6: return "Memcpy AtoD";
    case 7: return "Memcpy DtoA";
    case 8: return "Memcpy DtoD";
    case 9: return "Memcpy HtoH";
    case 10: return "Memcpy PtoP";
    default: return "Memcpy";
  }
}

// Builds the timeline from the parsed records.
class Builder {
 public:
  explicit Builder(Parsed& p) : p_(p), sid_map_(p.strings.size(), kUnmapped) {}

  Timeline build() {
    tl_.metadata["source"] = "opprof-tracer";
    tl_.metadata["tracer.format_version"] = fmt::format("{}.{}", p_.header.major, p_.header.minor);
    tl_.metadata["pid"] = std::to_string(p_.header.pid);
    tl_.metadata["clock"] = "cupti";
    tl_.metadata["clock.cupti_start_ns"] = std::to_string(p_.header.cupti_start_ns);
    tl_.metadata["clock.steady_start_ns"] = std::to_string(p_.header.steady_start_ns);
    tl_.metadata["clock.realtime_start_ns"] = std::to_string(p_.header.realtime_start_ns);
    tl_.metadata["tracer.window_only"] = (p_.header.flags & kFlagWindowOnly) != 0 ? "1" : "0";
    devices();
    activities();
    graph_stacks();
    launches();
    nvtx_ranges();
    windows();
    notes();
    return std::move(tl_);
  }

 private:
  static constexpr StrId kUnmapped = std::numeric_limits<StrId>::max();

  std::string_view text(std::uint32_t sid) const {
    return sid < p_.strings.size() ? p_.strings[sid] : std::string_view();
  }
  StrId str(std::uint32_t sid) {
    if (sid == 0 || sid >= sid_map_.size()) return kNoString;
    if (sid_map_[sid] == kUnmapped) sid_map_[sid] = tl_.strings.intern(p_.strings[sid]);
    return sid_map_[sid];
  }

  void devices() {
    for (const DeviceRecord& d : p_.devices) {
      const std::string key = fmt::format("device.{}.", d.device_id);
      tl_.metadata[key + "name"] = std::string(text(d.name_sid));
      tl_.metadata[key + "num_sms"] = std::to_string(d.sm_count);
      tl_.metadata[key + "cc"] = fmt::format("{}.{}", d.cc_major, d.cc_minor);
      // The keys the Kineto reader uses, so chip lookup reads every source alike.
      tl_.metadata[key + "compute_major"] = std::to_string(d.cc_major);
      tl_.metadata[key + "compute_minor"] = std::to_string(d.cc_minor);
      tl_.metadata[key + "memory_bytes"] = std::to_string(d.global_memory_bytes);
    }
  }

  // The NVTX stack its graph node had at capture, following clones back to the captured node.
  // A node created while instantiating (outside any range) may carry an empty stack of its own while the
  // node it was cloned from has the capture's: an empty stack does not end the walk.
  const std::vector<StackEntry>* capture_stack(std::uint64_t node) const {
    for (int hop = 0; hop < 64 && node != 0; ++hop) {
      if (auto it = p_.node_stacks.find(node); it != p_.node_stacks.end() && !it->second.empty()) return &it->second;
      auto c = p_.clone_of.find(node);
      if (c == p_.clone_of.end()) return nullptr;
      node = c->second;
    }
    return nullptr;
  }

  static bool graph_launched(const KernelTable& k, std::size_t row) {
    return k.graph_node[row] != 0 || (k.graph_id[row] != 0 && k.graph_id[row] != kNoGraph);
  }

  // The graph a replayed kernel's graph id stands for, through graph clones and exec → graph, until one
  // that a capture recorded.
  bool capture_graph_known(std::uint32_t graph, const std::unordered_map<std::uint32_t, std::size_t>& by_graph,
                           std::size_t* capture) const {
    for (int hop = 0; hop < 64 && graph != 0; ++hop) {
      if (auto it = by_graph.find(graph); it != by_graph.end()) {
        *capture = it->second;
        return true;
      }
      if (auto c = p_.graph_clone_of.find(graph); c != p_.graph_clone_of.end()) {
        graph = c->second;
      } else if (auto e = p_.exec_graph.find(graph); e != p_.exec_graph.end() && e->second != graph) {
        graph = e->second;
      } else {
        return false;
      }
    }
    return false;
  }

  // Capture-time stacks for graph-launched activity, by two independent routes:
  //  1. node ids: the activity's graph node, through clones, to a node a GraphNode or CaptureLaunch record
  //     gave a stack;
  //  2. launch order, for kernels no id route reached: the kernels of one graph launch (one correlation
  //     id) are matched to the launches of the capture that made the graph, the k-th replayed kernel of a
  //     name to the k-th captured launch of that name. The capture is the one whose graph id leads to the
  //     kernel's, else the latest capture before the replay whose kernel names cover the replay's.
  void graph_stacks() {
    KernelTable& k = tl_.kernels;
    std::vector<const std::vector<StackEntry>*> stacks(k.size(), nullptr);
    std::vector<std::size_t> unresolved;
    for (std::size_t row = 0; row < k.size(); ++row) {
      if (!graph_launched(k, row)) continue;
      ++graph_activities_;
      stacks[row] = capture_stack(k.graph_node[row]);
      if (stacks[row] != nullptr) {
        ++graph_by_node_id_;
      } else if (k.kind[row] == ActivityKind::kKernel) {
        unresolved.push_back(row);
      }
    }
    if (!unresolved.empty() && !p_.capture_launches.empty()) match_by_launch_order(unresolved, stacks);
    for (std::size_t row = 0; row < k.size(); ++row) {
      if (stacks[row] == nullptr || stacks[row]->empty()) continue;
      ++graph_activities_with_stack_;
      project_stack(row, stacks[row]);
    }
  }

  struct Capture {
    std::uint64_t id = 0;
    std::int64_t first_ts = 0;
    std::uint32_t graph_id = 0;
    std::vector<std::size_t> launches;  // indices into p_.capture_launches, in launch order
  };

  const std::string& demangled_sid(std::uint32_t sid) {
    auto it = demangled_by_sid_.find(sid);
    if (it == demangled_by_sid_.end()) it = demangled_by_sid_.emplace(sid, demangle(text(sid))).first;
    return it->second;
  }

  void match_by_launch_order(const std::vector<std::size_t>& unresolved,
                             std::vector<const std::vector<StackEntry>*>& stacks) {
    KernelTable& k = tl_.kernels;
    // Captures in the order they began; a capture's launches in the order they were made.
    std::vector<Capture> captures;
    std::unordered_map<std::uint64_t, std::size_t> capture_index;
    std::vector<std::size_t> order(p_.capture_launches.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return p_.capture_launches[a].ts < p_.capture_launches[b].ts;
    });
    for (std::size_t i : order) {
      const Parsed::CaptureLaunch& c = p_.capture_launches[i];
      if (c.name_sid == 0) continue;  // copies and fills: no kernel record to match by name
      auto [it, fresh] = capture_index.try_emplace(c.capture_id, captures.size());
      if (fresh) captures.push_back(Capture{c.capture_id, static_cast<std::int64_t>(c.ts), c.graph_id, {}});
      Capture& cap = captures[it->second];
      if (cap.graph_id == 0) cap.graph_id = c.graph_id;
      cap.launches.push_back(i);
    }
    if (captures.empty()) return;
    std::unordered_map<std::uint32_t, std::size_t> by_graph;
    for (std::size_t i = 0; i < captures.size(); ++i)
      if (captures[i].graph_id != 0) by_graph[captures[i].graph_id] = i;  // a re-capture replaces the graph's

    // The replays: graph-launched kernels grouped by the correlation id of their graph launch. A group
    // with any unresolved kernel is matched whole, so positions count every kernel of the replay.
    std::unordered_map<std::uint64_t, std::vector<std::size_t>> replays;
    std::vector<std::uint64_t> replay_order;
    std::unordered_map<std::uint64_t, bool> needs_match;
    for (std::size_t row : unresolved) needs_match[k.correlation[row]] = true;
    for (std::size_t row = 0; row < k.size(); ++row) {
      if (!graph_launched(k, row) || k.kind[row] != ActivityKind::kKernel) continue;
      if (!needs_match.count(k.correlation[row])) continue;
      auto [it, fresh] = replays.try_emplace(k.correlation[row]);
      if (fresh) replay_order.push_back(k.correlation[row]);
      it->second.push_back(row);
    }
    for (std::uint64_t corr : replay_order) {
      std::vector<std::size_t>& rows = replays[corr];
      std::stable_sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) { return k.start_ns[a] < k.start_ns[b]; });
      const Capture* cap = pick_capture(rows, captures, by_graph);
      if (cap == nullptr) continue;
      // Per name, the capture's launches in order; each replayed kernel takes the next one of its name.
      std::unordered_map<std::string_view, std::vector<std::size_t>> by_name;
      for (std::size_t i : cap->launches) by_name[demangled_sid(p_.capture_launches[i].name_sid)].push_back(i);
      std::unordered_map<std::string_view, std::size_t> taken;
      for (std::size_t row : rows) {
        const std::string_view name = tl_.str(k.name[row]);
        auto it = by_name.find(name);
        if (it == by_name.end()) continue;
        std::size_t& next = taken[name];
        if (next >= it->second.size()) continue;
        const std::size_t launch = it->second[next++];
        if (stacks[row] == nullptr && !p_.capture_launches[launch].stack.empty()) {
          stacks[row] = &p_.capture_launches[launch].stack;
          ++graph_by_launch_order_;
        }
      }
    }
  }

  const Capture* pick_capture(const std::vector<std::size_t>& rows, const std::vector<Capture>& captures,
                              const std::unordered_map<std::uint32_t, std::size_t>& by_graph) {
    const KernelTable& k = tl_.kernels;
    std::size_t index = 0;
    for (std::size_t row : rows)
      if (capture_graph_known(static_cast<std::uint32_t>(k.graph_id[row]), by_graph, &index)) return &captures[index];
    // No id leads to a capture: the latest capture made before the replay whose kernel names cover it.
    std::unordered_map<std::string_view, std::size_t> need;
    for (std::size_t row : rows) ++need[tl_.str(k.name[row])];
    const Capture* best = nullptr;
    const Capture* best_any_time = nullptr;
    for (const Capture& cap : captures) {
      std::unordered_map<std::string_view, std::size_t> have;
      for (std::size_t i : cap.launches) ++have[demangled_sid(p_.capture_launches[i].name_sid)];
      bool covers = true;
      for (const auto& [name, count] : need) {
        auto it = have.find(name);
        if (it == have.end() || it->second < count) {
          covers = false;
          break;
        }
      }
      if (!covers) continue;
      best_any_time = &cap;
      if (cap.first_ts <= k.start_ns[rows.front()]) best = &cap;
    }
    return best != nullptr ? best : best_any_time;
  }

  // One stream range per entry of the capture-time stack, covering exactly the activity in `row`.
  void project_stack(std::size_t row, const std::vector<StackEntry>* stack) {
    KernelTable& k = tl_.kernels;
    for (std::size_t i = 0; i < stack->size(); ++i) {
      std::string_view kept;
      const RangeKind kind = classify_nvtx_range(text((*stack)[i].text_sid), &kept);
      const std::size_t r = tl_.ranges.add(kind, RangeScope::kStream, tl_.strings.intern(kept), str((*stack)[i].domain_sid),
                                           k.pid[row], k.stream[row], k.start_ns[row], k.end_ns[row], k.device[row]);
      tl_.ranges.depth[r] = static_cast<std::int32_t>(i);
    }
  }

  void activities() {
    KernelTable& k = tl_.kernels;
    k.reserve(p_.kernels.size() + p_.memcpys.size() + p_.memsets.size());
    std::unordered_map<std::uint32_t, StrId> demangled;
    for (const KernelRecord& r : p_.kernels) {
      auto it = demangled.find(r.name_sid);
      if (it == demangled.end()) it = demangled.emplace(r.name_sid, tl_.strings.intern(demangle(text(r.name_sid)))).first;
      const std::size_t i = k.add(ActivityKind::kKernel, it->second, r.device_id, r.stream_id,
                                  static_cast<std::int64_t>(r.start_ns), static_cast<std::int64_t>(r.end_ns));
      k.mangled[i] = str(r.name_sid);
      k.pid[i] = p_.header.pid;
      k.context[i] = r.context_id;
      k.grid[i] = Dim3{static_cast<std::uint32_t>(r.grid_x), static_cast<std::uint32_t>(r.grid_y),
                       static_cast<std::uint32_t>(r.grid_z)};
      k.block[i] = Dim3{static_cast<std::uint32_t>(r.block_x), static_cast<std::uint32_t>(r.block_y),
                        static_cast<std::uint32_t>(r.block_z)};
      k.correlation[i] = r.correlation_id;
      k.graph_id[i] = r.graph_id;
      k.graph_node[i] = r.graph_node_id;
      k.registers_per_thread[i] = r.registers_per_thread;
      k.shared_mem_bytes[i] = r.static_shared_bytes + r.dynamic_shared_bytes;
    }
    // Memcpy and memset records carry the same fields; only the kind and the name differ.
    const auto add_transfer = [&](ActivityKind kind, StrId name, const auto& r) {
      const std::size_t i = k.add(kind, name, r.device_id, r.stream_id, static_cast<std::int64_t>(r.start_ns),
                                  static_cast<std::int64_t>(r.end_ns));
      k.pid[i] = p_.header.pid;
      k.context[i] = r.context_id;
      k.correlation[i] = r.correlation_id;
      k.graph_id[i] = r.graph_id;
      k.graph_node[i] = r.graph_node_id;
      k.bytes[i] = r.bytes;
    };
    for (const MemcpyRecord& r : p_.memcpys)
      add_transfer(ActivityKind::kMemcpy, tl_.strings.intern(memcpy_name(r.copy_kind)), r);
    for (const MemsetRecord& r : p_.memsets) add_transfer(ActivityKind::kMemset, tl_.strings.intern("Memset"), r);
  }

  void launches() {
    LaunchTable& l = tl_.launches;
    l.reserve(p_.api_calls.size());
    std::unordered_map<std::uint64_t, StrId> names;
    for (const ApiCallRecord& r : p_.api_calls) {
      const std::uint64_t key = (std::uint64_t{r.domain} << 32) | r.cbid;
      auto it = names.find(key);
      if (it == names.end()) {
        auto n = p_.api_names.find(key);
        StrId id = n != p_.api_names.end()
                       ? str(n->second)
                       : tl_.strings.intern(fmt::format("{}_cbid_{}", r.domain == kApiDomainDriver ? "driver" : "runtime", r.cbid));
        it = names.emplace(key, id).first;
      }
      l.add(it->second, r.pid != 0 ? r.pid : p_.header.pid, r.tid, static_cast<std::int64_t>(r.start_ns),
            static_cast<std::int64_t>(r.end_ns), r.correlation_id);
    }
  }

  std::size_t add_thread_range(std::uint32_t text_sid, std::uint32_t domain_sid, std::uint32_t category,
                               std::uint64_t tid, std::int64_t start) {
    std::string_view kept;
    const RangeKind kind = classify_nvtx_range(text(text_sid), text(domain_sid), category, &kept);
    return tl_.ranges.add(kind, RangeScope::kThread, tl_.strings.intern(kept), str(domain_sid), p_.header.pid, tid,
                          start, start);
  }

  void nvtx_ranges() {
    const std::vector<std::uint32_t> order = thread_time_order(p_.nvtx);
    RangeTable& r = tl_.ranges;
    std::unordered_map<std::uint64_t, std::size_t> started;  // range id -> row
    std::unordered_map<std::uint32_t, std::vector<std::size_t>> open;  // per domain, current thread
    std::int32_t open_on_thread = 0;
    std::uint64_t current_tid = 0;
    bool first = true;
    auto close_thread = [&] {
      for (auto& [domain, rows] : open) {
        for (std::size_t row : rows) r.end_ns[row] = std::max(r.start_ns[row], p_.max_ts);
        unclosed_ += rows.size();
        rows.clear();
      }
      open_on_thread = 0;
    };
    for (const std::uint32_t event : order) {
      const NvtxEvent& e = p_.nvtx[event];
      if (first || e.tid != current_tid) {
        if (!first) close_thread();
        current_tid = e.tid;
        first = false;
      }
      const auto ts = static_cast<std::int64_t>(e.ts);
      switch (e.kind) {
        case NvtxEvent::kPush: {
          const std::size_t row = add_thread_range(e.text_sid, e.domain_sid, e.category, e.tid, ts);
          r.depth[row] = open_on_thread++;
          // The torch observer's operators carry autograd's link to the forward operator.
          if (e.payload != 0 && text(e.domain_sid) == kTorchObserverDomain) {
            r.sequence_nr[row] = autograd_link_sequence_nr(e.payload);
            r.forward_thread[row] = autograd_link_forward_thread(e.payload);
          }
          open[e.domain_sid].push_back(row);
          break;
        }
        case NvtxEvent::kPop: {
          auto& rows = open[e.domain_sid];
          if (rows.empty()) {  // pushed before the window (window-only mode) or never pushed
            ++unmatched_pops_;
            break;
          }
          r.end_ns[rows.back()] = ts;
          rows.pop_back();
          --open_on_thread;
          break;
        }
        case NvtxEvent::kStart: {
          const std::size_t row = add_thread_range(e.text_sid, e.domain_sid, e.category, e.tid, ts);
          r.end_ns[row] = std::max(ts, p_.max_ts);  // until its end is seen
          started[e.range_id] = row;
          break;
        }
        case NvtxEvent::kEnd: break;
        case NvtxEvent::kMark: communication_mark(e, open[e.domain_sid]); break;
      }
    }
    if (!first) close_thread();
    std::stable_sort(tl_.communication_args.begin(), tl_.communication_args.end(),
                     [](const CommunicationArgs& a, const CommunicationArgs& b) { return a.range < b.range; });
    // Ends may come from another thread: pair them after all starts are known.
    for (const std::uint32_t event : order) {
      const NvtxEvent& e = p_.nvtx[event];
      if (e.kind != NvtxEvent::kEnd) continue;
      auto it = started.find(e.range_id);
      if (it == started.end()) {
        ++unmatched_pops_;
        continue;
      }
      r.end_ns[it->second] = static_cast<std::int64_t>(e.ts);
      started.erase(it);
    }
    unclosed_ += started.size();
  }

  // A communication mark: the arguments of the observer's range open around it (the innermost of its
  // domain on the thread), or a process group of this process. Marks that are neither are counted only.
  void communication_mark(const NvtxEvent& e, const std::vector<std::size_t>& open_rows) {
    const std::string_view t = text(e.text_sid);
    if (starts_with(t, kCommArgsMarkPrefix)) {
      auto m = parse_comm_args_mark(t);
      if (!m || open_rows.empty() || text(e.domain_sid) != kTorchObserverDomain) {
        ++stray_comm_marks_;
        return;
      }
      const auto range = static_cast<std::uint32_t>(open_rows.back());
      if (!tl_.communication_args.empty() && tl_.communication_args.back().range == range) return;  // one per range
      tl_.communication_args.push_back(CommunicationArgs{range, m->elements, m->bytes, intern_or_none(m->dtype),
                                                         intern_or_none(m->process_group),
                                                         intern_or_none(m->process_group_desc),
                                                         static_cast<std::int32_t>(std::min<std::int64_t>(m->group_size, INT32_MAX)),
                                                         intern_or_none(m->collective)});
    } else if (starts_with(t, kProcessGroupMarkPrefix)) {
      auto m = parse_process_group_mark(t);
      if (!m) {
        ++stray_comm_marks_;
        return;
      }
      for (const ProcessGroup& g : tl_.process_groups)
        if (tl_.str(g.name) == m->name) return;  // written again by a later window
      tl_.process_groups.push_back(ProcessGroup{p_.header.pid, intern_or_none(m->name), intern_or_none(m->desc),
                                                intern_or_none(m->backend),
                                                static_cast<std::int32_t>(std::min<std::int64_t>(m->size, INT32_MAX)),
                                                intern_or_none(m->ranks)});
    }
  }
  StrId intern_or_none(const std::string& s) { return s.empty() ? kNoString : tl_.strings.intern(s); }

  void windows() {
    std::stable_sort(p_.windows.begin(), p_.windows.end(),
                     [](const WindowEvent& a, const WindowEvent& b) { return a.ts < b.ts; });
    const StrId text = tl_.strings.intern("capture window");
    std::size_t count = 0;
    std::int64_t first_start = -1, last_end = -1;
    const WindowEvent* open = nullptr;
    auto emit = [&](const WindowEvent& s, std::int64_t end) {
      const auto start = static_cast<std::int64_t>(s.ts);
      tl_.ranges.add(RangeKind::kCaptureWindow, RangeScope::kThread, text, kNoString, p_.header.pid, s.tid, start, end);
      if (first_start < 0) first_start = start;
      last_end = end;
      ++count;
    };
    for (const WindowEvent& w : p_.windows) {
      if (w.start) {
        if (open == nullptr) open = &w;
      } else if (open != nullptr) {
        emit(*open, static_cast<std::int64_t>(w.ts));
        open = nullptr;
      }
    }
    if (open != nullptr) {
      emit(*open, std::max(static_cast<std::int64_t>(open->ts), p_.max_ts));
      tl_.metadata["warning.window_open"] = "cudaProfilerStart without cudaProfilerStop: window closed at the last record";
    }
    tl_.metadata["window.count"] = std::to_string(count);
    if (count != 0) {
      tl_.metadata["window.start_ns"] = std::to_string(first_start);
      tl_.metadata["window.end_ns"] = std::to_string(last_end);
    }
  }

  void notes() {
    auto& m = tl_.metadata;
    m["graph.activities"] = std::to_string(graph_activities_);
    m["graph.activities_with_capture_stack"] = std::to_string(graph_activities_with_stack_);
    m["graph.resolved_by_node_id"] = std::to_string(graph_by_node_id_);
    m["graph.resolved_by_launch_order"] = std::to_string(graph_by_launch_order_);
    m["graph.capture_launches"] = std::to_string(p_.capture_launches.size());
    m["nvtx.marks"] = std::to_string(p_.marks);
    if (unclosed_ != 0) {
      m["warning.unclosed_ranges"] =
          fmt::format("{} NVTX ranges were never closed; they end at the last record", unclosed_);
    }
    if (unmatched_pops_ != 0) m["nvtx.unmatched_ends"] = std::to_string(unmatched_pops_);
    if (stray_comm_marks_ != 0) m["nvtx.stray_communication_marks"] = std::to_string(stray_comm_marks_);
    if (p_.unknown_records != 0) m["tracer.unknown_records_skipped"] = std::to_string(p_.unknown_records);
    if (p_.cupti_dropped != 0 || p_.pool_exhausted != 0) {
      m["warning.dropped"] = fmt::format(
          "CUPTI dropped {} activity records ({} buffer requests found the pool empty): raise OPPROF_TRACE_BUFFERS",
          p_.cupti_dropped, p_.pool_exhausted);
    }
    if (p_.has_trailer) {
      m["clock.cupti_end_ns"] = std::to_string(p_.trailer.cupti_end_ns);
      m["clock.steady_end_ns"] = std::to_string(p_.trailer.steady_end_ns);
    }
    if (p_.truncated) {
      m["warning.truncated"] = fmt::format(
          "the log ends inside a record at byte {}; read up to the last complete record", p_.truncated_at);
    } else if (!p_.has_trailer) {
      m["warning.no_trailer"] =
          "the traced process did not exit cleanly: activity still buffered in CUPTI at that point is missing";
    }
  }

  Parsed& p_;
  Timeline tl_;
  std::vector<StrId> sid_map_;
  std::uint64_t unclosed_ = 0;
  std::uint64_t unmatched_pops_ = 0;
  std::uint64_t stray_comm_marks_ = 0;  // communication marks outside an observer range, or malformed
  std::uint64_t graph_activities_ = 0;
  std::uint64_t graph_activities_with_stack_ = 0;
  std::uint64_t graph_by_node_id_ = 0;
  std::uint64_t graph_by_launch_order_ = 0;
  std::unordered_map<std::uint32_t, std::string> demangled_by_sid_;
};

}  // namespace

Timeline detail::read_tracer_log(const std::string& path, const TracerLogReadOptions& options) {
  MappedFile file(path);
  Parsed parsed = parse(path, file, options);
  // The string views point into the mapping, which lives until the timeline has interned them.
  return Builder(parsed).build();
}

Timeline read_tracer_log(const std::string& path) { return detail::read_tracer_log(path, {}); }

}  // namespace opprof
