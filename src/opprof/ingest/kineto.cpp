// torch.profiler (Kineto) trace reader. The file is never held whole: ChunkedInput keeps a window of a
// few MB (of the mapped file, or read into buffers), a byte scanner walks the top-level object and cuts the
// "traceEvents" array into its event objects. The events of each chunk form one batch (a view of the
// mapping, or a copy out of the buffers) parsed by simdjson On Demand on worker threads, one batch per core
// at a time, while the scanner cuts the next chunk; the parsed events are appended to the timeline's columns
// on the reading thread, batch after batch in file order, so the timeline (and the order its strings are
// interned in) is the same whatever the number of threads.
#include "opprof/ingest/kineto.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "opprof/ingest/chunked_input.hpp"
#include "opprof/ingest/communication_args.hpp"
#include "opprof/ingest/json_diagnose.hpp"
#include "opprof/ingest/json_scan.hpp"
#include "opprof/ingest/kineto_detail.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace detail {

static_assert(ChunkedInput::kPadding >= simdjson::SIMDJSON_PADDING,
              "events are parsed in place: the window needs simdjson's padding");

std::optional<std::int64_t> parse_trace_us_as_ns(std::string_view text) {
  // Called twice per event with simdjson's raw token, which carries the whitespace up to the next
  // comma: trimmed here by hand, the general trim() showed up in profiles.
  auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!text.empty() && ws(text.back())) text.remove_suffix(1);
  while (!text.empty() && ws(text.front())) text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0;
  const bool negative = text[0] == '-';
  if (negative) i = 1;

  const std::size_t whole_begin = i;
  std::uint64_t whole = 0;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    if (whole > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) return std::nullopt;
    whole = whole * 10 + static_cast<std::uint64_t>(text[i] - '0');
  }
  if (i == whole_begin) return std::nullopt;

  std::uint64_t fraction_ns = 0;
  bool round_up = false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    const std::size_t fraction_begin = i;
    int digits = 0;
    for (; i < text.size() && is_digit(text[i]); ++i, ++digits) {
      const auto digit = static_cast<std::uint64_t>(text[i] - '0');
      if (digits < 3)
        fraction_ns = fraction_ns * 10 + digit;
      else if (digits == 3)
        round_up = digit >= 5;  // the fourth decimal alone decides: half away from zero
    }
    if (i == fraction_begin) return std::nullopt;
    for (int d = std::min(digits, 3); d < 3; ++d) fraction_ns *= 10;
  }

  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    // Exponents are not how torch writes times; a double is as exact as such a writer was.
    double us = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), us);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    const double ns = us * 1000.0;
    if (!std::isfinite(ns) || std::fabs(ns) >= 9.2e18) return std::nullopt;
    return static_cast<std::int64_t>(std::llround(ns));
  }
  if (i != text.size()) return std::nullopt;

  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (whole > kMax / 1000) return std::nullopt;
  const std::uint64_t ns = whole * 1000 + fraction_ns + (round_up ? 1 : 0);
  if (ns > kMax) return std::nullopt;
  return negative ? -static_cast<std::int64_t>(ns) : static_cast<std::int64_t>(ns);
}

namespace {

namespace od = simdjson::ondemand;

constexpr std::string_view kTruncatedInEvent =
    "truncated: the trace ends inside an event (was the profiler stopped before it finished writing?)";
constexpr std::string_view kTruncatedInArray =
    "truncated: the trace ends inside the \"traceEvents\" array (was the profiler stopped before it finished "
    "writing?)";
constexpr std::string_view kTruncatedTop =
    "truncated: the trace ends before its top-level object is closed (was the profiler stopped before it "
    "finished writing?)";
// Top-level values other than traceEvents (deviceProperties, distributedInfo, ...) are small; one larger
// than this is skipped rather than held in memory.
constexpr std::size_t kMaxTopValueBytes = std::size_t{16} << 20;
// Ids given to pid/tid values that are names ("Spans") on events that are imported anyway.
constexpr std::uint64_t kFirstNamedId = 0x80000000u;

enum class EventClass : std::uint8_t {
  kIgnored,  // profiler bookkeeping ("Trace", "overhead", flow arrows) and categories opprof does not know
  kKernel,
  kMemcpy,
  kMemset,
  kRuntime,
  kDriver,
  kCpuOp,
  kUserAnnotation,
  kGpuUserAnnotation,
  kPythonFunction,
  kForwardBackwardFlow,  // "fwdbwd" flow arrows: a forward operator -> the backward node that differentiates it
};

EventClass classify_category(std::string_view cat) {
  // Lower-cased so that the spellings of older Kineto versions ("Kernel", "Runtime", "Operator") map too.
  char lower[32];
  if (cat.size() > sizeof lower) return EventClass::kIgnored;
  for (std::size_t i = 0; i < cat.size(); ++i)
    lower[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(cat[i])));
  const std::string_view c(lower, cat.size());
  if (c == "kernel") return EventClass::kKernel;
  if (c == "gpu_memcpy" || c == "memcpy") return EventClass::kMemcpy;
  if (c == "gpu_memset" || c == "memset") return EventClass::kMemset;
  if (c == "cuda_runtime" || c == "runtime") return EventClass::kRuntime;
  if (c == "cuda_driver" || c == "driver") return EventClass::kDriver;
  if (c == "cpu_op" || c == "operator") return EventClass::kCpuOp;
  if (c == "user_annotation") return EventClass::kUserAnnotation;
  if (c == "gpu_user_annotation") return EventClass::kGpuUserAnnotation;
  if (c == "python_function") return EventClass::kPythonFunction;
  if (c == "fwdbwd") return EventClass::kForwardBackwardFlow;
  return EventClass::kIgnored;
}

RangeKind annotation_kind(std::string_view name) {
  if (starts_with(name, kModuleRangePrefix)) return RangeKind::kModule;
  if (starts_with(name, kCompiledGraphCallPrefix)) return RangeKind::kCompiledRegion;
  return RangeKind::kAnnotation;
}

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Whether the raw (still escaped) key that starts at raw is exactly word. Compares the word and the
// closing quote with a fixed size, which compiles to a few loads: keys are matched per field of every
// event. Reading past a shorter key is safe: inside an event a key is followed by '"', ':' and a value,
// and the event by the window's padding. A key written with escapes matches nothing opprof reads.
template <std::size_t N>
bool key_is(const char* raw, const char (&word)[N]) {
  return std::memcmp(raw, word, N - 1) == 0 && raw[N - 1] == '"';
}

std::string describe_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

// "computeMajor" -> "compute_major", "cudaAPIVersion" -> "cuda_api_version", "Op count" -> "op_count".
std::string snake_case(std::string_view key) {
  std::string out;
  out.reserve(key.size() + 4);
  for (std::size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    const bool upper = c >= 'A' && c <= 'Z';
    if (upper && i > 0 && !out.empty() && out.back() != '_') {
      const char prev = key[i - 1];
      const bool prev_lower_or_digit = (prev >= 'a' && prev <= 'z') || (prev >= '0' && prev <= '9');
      const bool next_lower = i + 1 < key.size() && key[i + 1] >= 'a' && key[i + 1] <= 'z';
      const bool prev_upper = prev >= 'A' && prev <= 'Z';
      if (prev_lower_or_digit || (prev_upper && next_lower)) out.push_back('_');
    }
    if (c == ' ' || c == '-' || c == '.')
      out.push_back('_');
    else
      out.push_back(upper ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return out;
}

// A pid or tid: torch writes numbers for real threads and names ("Spans", "Traces") for its own rows.
struct IdValue {
  bool present = false;
  bool numeric = false;
  std::int64_t number = 0;
  std::string_view text;  // when not numeric; valid while the event's batch is
};

struct EventArgs {
  // The framework operator's id, CUPTI's link of a launch to its activity, the CUDA context.
  std::uint64_t external_id = 0, correlation = 0, context = 0;
  std::uint64_t graph_id = 0, graph_node = 0;  // kernels a CUDA graph launched
  std::uint64_t bytes = 0;                     // memcpy / memset size
  std::optional<std::uint64_t> device;
  std::optional<std::uint64_t> stream;
  Dim3 grid, block;
  std::uint32_t registers = 0;
  std::uint32_t shared_mem = 0;
  std::int64_t sequence_nr = kNoSequenceNr;  // cpu_op: autograd's "Sequence number"
  std::uint64_t forward_thread = 0;          // cpu_op of a backward node: "Fwd thread id"
  std::string_view name;    // metadata events: process_name / thread_name
  std::string_view labels;  // metadata events: process_labels
  // A communication range's (is_communication_range): the inputs record_shapes wrote (raw JSON arrays)
  // and record_param_comms's arguments. Read only when `communication` is set before the args are.
  bool communication = false;
  std::string_view input_dims, input_types;
  std::int64_t msg_elements = -1, group_size = -1;  // "In msg nelems", "Group size"
  std::string_view dtype, process_group, process_group_desc, collective;
};

struct Event {
  std::string_view ph;
  std::string_view name;
  std::string_view cat;
  bool has_cat = false;
  EventClass cls = EventClass::kIgnored;  // the category's
  std::size_t offset = 0;                 // where the event starts in its batch, for later errors
  IdValue pid, tid;
  std::optional<std::int64_t> ts, dur;
  std::uint64_t flow_id = 0;  // flow events' "id"
  EventArgs args;
};

// One end of a "fwdbwd" flow: 's' at the forward operator's start, 'f' at the backward node's.
struct FlowEnd {
  std::uint64_t id;
  std::uint64_t pid, tid;
  std::int64_t ts;
  bool start;
};

struct Category {
  std::string text;
  StrId id = kNoString;
  EventClass cls = EventClass::kIgnored;
  std::uint64_t ignored = 0;  // X events of this category that were not imported
};

std::uint32_t to_u32(std::uint64_t v) {
  return v > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                       : static_cast<std::uint32_t>(v);
}


// A run of consecutive events of the input, parsed and merged on a pipeline thread: a view of the mapped
// file, or a copy out of the input window where the file is read into buffers that are reused. The events'
// strings view the batch's bytes (or `unescaped`), so a batch (and the mapping's pages under it) lives until
// its events are in the timeline.
struct EventBatch {
  const char* data = nullptr;  // size bytes, then at least ChunkedInput::kPadding readable ones
  std::size_t size = 0;
  std::size_t readable = 0;    // bytes readable from data on: size and the padding or more
  std::unique_ptr<char[]> copy;  // what data points into when the bytes were copied
  std::size_t capacity = 0;
  InputPosition base;                                        // where data[0] is in the file
  std::vector<std::pair<std::size_t, std::size_t>> spans;   // each event's offset and length in bytes

  // What parsing gave: the events to import, in file order, and the counts of those skipped early.
  std::vector<Event> events;
  std::deque<std::string> unescaped;  // strings written with escapes, unescaped
  std::vector<std::pair<std::string, std::uint64_t>> ignored_by_category;
  std::array<std::uint64_t, 256> ignored_phases{};  // by the phase's letter
  std::exception_ptr error;                         // the first malformed event's InputError
  bool parsed = false;                              // guarded by BatchPipeline::mutex_

  void fill(const char* bytes, std::size_t n, const InputPosition& where) {
    if (n > capacity) {
      capacity = std::max(n, capacity + capacity / 2);
      copy.reset(new char[capacity + ChunkedInput::kPadding]);  // not zeroed: fill() writes it all
    }
    std::memcpy(copy.get(), bytes, n);
    std::memset(copy.get() + n, ' ', ChunkedInput::kPadding);  // simdjson reads past a document's end
    view(copy.get(), n, n + ChunkedInput::kPadding, where);
  }
  void view(const char* bytes, std::size_t n, std::size_t readable_bytes, const InputPosition& where) {
    data = bytes;
    size = n;
    readable = readable_bytes;
    base = where;
  }
  void clear() {
    spans.clear();
    events.clear();
    unescaped.clear();
    ignored_by_category.clear();
    ignored_phases.fill(0);
    error = nullptr;
    parsed = false;
  }
  // Line and column (1-based, in bytes) and byte offset of data[i].
  InputPosition position_of(std::size_t i) const {
    i = std::min(i, size);
    InputPosition pos = base;
    pos.byte_offset += i;
    pos.line += count_newlines(data, i);
    if (const void* nl = i > 0 ? ::memrchr(data, '\n', i) : nullptr)
      pos.column = i - static_cast<std::size_t>(static_cast<const char*>(nl) - data);
    else
      pos.column += i;
    return pos;
  }
};

// An event's keys that opprof reads, told apart by their first byte, then compared whole.
enum class EventKey : std::uint8_t { kPh, kCat, kName, kPid, kTid, kTs, kDur, kId, kArgs, kOther };

EventKey event_key(const char* raw) {
  auto either = [&](const auto& word, EventKey k) { return key_is(raw, word) ? k : EventKey::kOther; };
  switch (raw[0]) {
    case 'p': return key_is(raw, "ph") ? EventKey::kPh : either("pid", EventKey::kPid);
    case 'c': return either("cat", EventKey::kCat);
    case 'n': return either("name", EventKey::kName);
    case 't': return key_is(raw, "ts") ? EventKey::kTs : either("tid", EventKey::kTid);
    case 'd': return either("dur", EventKey::kDur);
    case 'i': return either("id", EventKey::kId);
    case 'a': return either("args", EventKey::kArgs);
    default: return EventKey::kOther;
  }
}

// The argument keys opprof reads, told apart by their first byte, then compared whole.
enum class ArgKey : std::uint8_t {
  kExternalId, kSequenceNumber, kFwdThreadId, kCorrelation, kContext, kDevice, kStream, kSharedMemory,
  kRegisters, kGrid, kBlock, kGraphId, kGraphNodeId, kBytes, kName, kLabels,
  kIgnored,            // another key starting like one of those: read on
  kAfterAutogradLink,  // another "S..." or "F..." key: past the autograd link torch writes after the External id
  kOther,              // any other key: an operator's shapes and the like, which follow what opprof reads
  // Keys of a communication range's event, read only there; elsewhere as kOther.
  kInputDims, kInputType, kInMsgNelems, kDtype, kProcessGroupName, kProcessGroupDesc, kGroupSize, kCollectiveName,
};

ArgKey arg_key(const char* raw) {
  auto either = [&](const auto& word, ArgKey k) { return key_is(raw, word) ? k : ArgKey::kIgnored; };
  switch (raw[0]) {
    case 'E': return either("External id", ArgKey::kExternalId);
    case 'R': return ArgKey::kIgnored;  // "Record function id", between the External id and the sequence number
    case 'S': return key_is(raw, "Sequence number") ? ArgKey::kSequenceNumber : ArgKey::kAfterAutogradLink;
    case 'F': return key_is(raw, "Fwd thread id") ? ArgKey::kFwdThreadId : ArgKey::kAfterAutogradLink;
    case 'c': return key_is(raw, "correlation") ? ArgKey::kCorrelation : either("context", ArgKey::kContext);
    case 'd': return key_is(raw, "device") ? ArgKey::kDevice : key_is(raw, "dtype") ? ArgKey::kDtype : ArgKey::kIgnored;
    case 'I':
      if (key_is(raw, "Input Dims")) return ArgKey::kInputDims;
      if (key_is(raw, "Input type")) return ArgKey::kInputType;
      return key_is(raw, "In msg nelems") ? ArgKey::kInMsgNelems : ArgKey::kOther;
    case 'P':
      if (key_is(raw, "Process Group Name")) return ArgKey::kProcessGroupName;
      return key_is(raw, "Process Group Description") ? ArgKey::kProcessGroupDesc : ArgKey::kOther;
    case 'G': return key_is(raw, "Group size") ? ArgKey::kGroupSize : ArgKey::kOther;
    case 'C': return key_is(raw, "Collective name") ? ArgKey::kCollectiveName : ArgKey::kOther;
    case 's': return key_is(raw, "stream") ? ArgKey::kStream : either("shared memory", ArgKey::kSharedMemory);
    case 'g':
      if (key_is(raw, "grid")) return ArgKey::kGrid;
      return key_is(raw, "graph id") ? ArgKey::kGraphId : either("graph node id", ArgKey::kGraphNodeId);
    case 'b': return key_is(raw, "block") ? ArgKey::kBlock : either("bytes", ArgKey::kBytes);
    case 'r': return either("registers per thread", ArgKey::kRegisters);
    case 'n': return either("name", ArgKey::kName);
    case 'l': return either("labels", ArgKey::kLabels);
    default: return ArgKey::kOther;
  }
}

// Parses the events of one batch at a time; one per worker thread.
class EventParser {
 public:
  explicit EventParser(const std::string& path) : path_(path) {}
  // Fills batch.events and its counts; throws InputError at the first malformed event.
  void parse(EventBatch& batch);

 private:
  [[noreturn]] void fail_at(std::size_t i, std::string_view message) const {
    throw InputError(path_, std::string(message), batch_->position_of(i));
  }
  std::size_t index_of(const char* p, std::size_t fallback) const {
    if (p < batch_->data || p >= batch_->data + batch_->size) return fallback;
    return static_cast<std::size_t>(p - batch_->data);
  }
  // A malformed event: named at the first byte where the strict checker finds the grammar broken and
  // with what it expected there; simdjson's own location (a token near the problem) when the checker
  // finds nothing (an encoding error, a type error).
  template <class Located>
  [[noreturn]] void fail_json(Located& where, std::size_t event_start, simdjson::error_code error,
                              std::string_view context) {
    fail_if_json_problem(event_start, error);
    const char* at = nullptr;
    if (where.current_location().get(at) != simdjson::SUCCESS) at = nullptr;
    fail_at(index_of(at, event_start),
            fmt::format("malformed event: {}{}", context, simdjson::error_message(error)));
  }
  void fail_if_json_problem(std::size_t event_start, simdjson::error_code error) const {
    if (error == simdjson::UTF8_ERROR || event_start != event_start_) return;
    if (auto problem = find_json_problem(std::string_view(batch_->data + event_start_, event_length_)))
      fail_at(event_start_ + problem->offset, "malformed event: " + problem->message);
  }

  bool parse_event(od::document& doc, std::size_t start, Event& ev);
  EventClass class_of(std::string_view cat);
  bool skipped_early(const Event& ev);
  // Which arguments an event's category needs, so that reading can stop once it has them.
  // kUpToAutogradLink: the External id and the "Sequence number" / "Fwd thread id" that torch writes right
  // after it (and after "Record function id") on operators that autograd records.
  enum class ArgsNeeded { kAll, kUpToExternalId, kUpToAutogradLink, kUpToCorrelation };
  static bool reading_stops_after(ArgKey key, ArgsNeeded needed, const EventArgs& args) {
    switch (needed) {
      case ArgsNeeded::kAll: return false;
      case ArgsNeeded::kUpToExternalId: return key == ArgKey::kExternalId;
      case ArgsNeeded::kUpToCorrelation: return key == ArgKey::kCorrelation;
      case ArgsNeeded::kUpToAutogradLink:
        return key == ArgKey::kFwdThreadId || key == ArgKey::kAfterAutogradLink ||
               (key >= ArgKey::kOther && args.external_id != 0);
    }
    return false;
  }
  void parse_args(od::value& value, std::size_t start, ArgsNeeded needed, EventArgs& args);
  void read_id(od::value& value, std::size_t start, IdValue& out);
  std::optional<std::int64_t> read_time(od::value& value, std::size_t start, std::string_view key);
  bool read_uint(od::value& value, std::size_t start, std::uint64_t& out);
  bool read_uint_slow(od::value& value, std::size_t start, std::uint64_t& out);
  void read_dim3(od::value& value, std::size_t start, std::string_view name, Dim3& out);
  std::string_view read_string(od::value& value, std::size_t start);

  const std::string& path_;
  EventBatch* batch_ = nullptr;
  od::parser parser_;
  std::size_t event_start_ = 0;  // the event being parsed, in the batch
  std::size_t event_length_ = 0;
  std::vector<std::pair<std::string, EventClass>> classes_;  // the categories seen, classified
};

void EventParser::parse(EventBatch& batch) {
  batch_ = &batch;
  batch.events.reserve(batch.spans.size());
  for (const auto& [start, length] : batch.spans) {
    event_start_ = start;
    event_length_ = length;
    od::document doc;
    if (auto e = parser_.iterate(batch.data + start, length, batch.readable - start)
                     .get(doc)) {
      fail_if_json_problem(start, e);
      fail_at(start, fmt::format("malformed event: {}", simdjson::error_message(e)));
    }
    Event ev;
    ev.offset = start;
    if (parse_event(doc, start, ev)) batch.events.push_back(ev);
  }
}

EventClass EventParser::class_of(std::string_view cat) {
  // A trace has a dozen categories; a linear look-up beats hashing each event's.
  for (const auto& [text, cls] : classes_)
    if (text == cat) return cls;
  classes_.emplace_back(std::string(cat), classify_category(cat));
  return classes_.back().second;
}

bool EventParser::skipped_early(const Event& ev) {
  // Most events that opprof does not import (flow arrows, instants) say so in their first key; stop there.
  if (ev.ph.empty()) return false;
  if (ev.ph != "X") {
    if (ev.ph == "M") return false;
    // Flow arrows: only fwdbwd ones are read, and which kind an arrow is its category says.
    if (ev.ph == "s" || ev.ph == "f") {
      if (!ev.has_cat || ev.cls == EventClass::kForwardBackwardFlow) return false;
    }
    ++batch_->ignored_phases[static_cast<unsigned char>(ev.ph[0])];
    return true;
  }
  if (ev.has_cat && ev.cls == EventClass::kIgnored) {
    auto& counts = batch_->ignored_by_category;
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == ev.cat; });
    if (it == counts.end())
      counts.emplace_back(std::string(ev.cat), 1);
    else
      ++it->second;
    return true;
  }
  return false;
}

std::string_view EventParser::read_string(od::value& value, std::size_t start) {
  // Most strings in a trace have no escapes: then the text between the quotes, in the window, is the
  // value, and the copy On Demand's unescaping makes (byte by byte in its portable build) is saved. The
  // view lives as long as the batch. simdjson's first stage has already checked the
  // string for encoding errors and raw control characters.
  std::string_view token = value.raw_json_token();
  if (token.size() >= 2 && token.front() == '"') {
    while (is_ws(token.back())) token.remove_suffix(1);  // stops at the opening quote at the latest
    if (token.size() >= 2 && token.back() == '"') {
      token = token.substr(1, token.size() - 2);
      if (std::memchr(token.data(), '\\', token.size()) == nullptr) return token;
    }
  }
  // With escapes: On Demand unescapes into the parser's buffer, which the next event overwrites.
  std::string_view s;
  const auto e = value.get_string().get(s);
  if (e == simdjson::SUCCESS) return batch_->unescaped.emplace_back(s);
  if (e == simdjson::INCORRECT_TYPE) return {};
  fail_json(value, start, e, "");
}

void EventParser::read_id(od::value& value, std::size_t start, IdValue& out) {
  od::json_type type;
  if (auto e = value.type().get(type)) fail_json(value, start, e, "reading a pid/tid: ");
  if (type == od::json_type::number) {
    std::int64_t n = 0;
    if (value.get_int64().get(n) == simdjson::SUCCESS) {
      out = IdValue{true, true, n, {}};
      return;
    }
    std::uint64_t u = 0;
    if (read_uint_slow(value, start, u)) out = IdValue{true, true, static_cast<std::int64_t>(u), {}};
    return;
  }
  if (type == od::json_type::string) {
    out.present = true;
    out.text = read_string(value, start);
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(out.text.data(), out.text.data() + out.text.size(), n);
    if (ec == std::errc() && end == out.text.data() + out.text.size() && !out.text.empty()) {
      out.numeric = true;
      out.number = n;
    }
  }
}

std::optional<std::int64_t> EventParser::read_time(od::value& value, std::size_t start, std::string_view key) {
  std::string_view token = value.raw_json_token();
  if (!token.empty() && token.front() == '"') token = read_string(value, start);
  if (auto ns = parse_trace_us_as_ns(token)) return ns;
  const char* at = nullptr;
  if (value.current_location().get(at) != simdjson::SUCCESS) at = nullptr;
  fail_at(index_of(at, start), fmt::format("malformed event: expected a number of microseconds for \"{}\", found "
                                           "'{}'",
                                           key, trim(token).substr(0, 40)));
}

bool EventParser::read_uint(od::value& value, std::size_t start, std::uint64_t& out) {
  if (value.get_uint64().get(out) == simdjson::SUCCESS) return true;
  return read_uint_slow(value, start, out);
}

bool EventParser::read_uint_slow(od::value& value, std::size_t start, std::uint64_t& out) {
  // Not a plain unsigned integer: accept what still means one (1.0, "7"), ignore what does not (-1, null),
  // and stop on what is not JSON.
  od::json_type type;
  if (auto e = value.type().get(type)) fail_json(value, start, e, "");
  if (type == od::json_type::number) {
    od::number n;
    if (auto e = value.get_number().get(n)) fail_json(value, start, e, "");
    if (n.is_double()) {
      const double d = n.get_double();
      if (!(d >= 0) || d >= 1.8e19) return false;
      out = static_cast<std::uint64_t>(d);
      return true;
    }
    if (n.is_int64()) return false;  // negative
    out = n.get_uint64();
    return true;
  }
  if (type == od::json_type::string) {
    const std::string_view s = read_string(value, start);
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty();
  }
  return false;
}

void EventParser::read_dim3(od::value& value, std::size_t start, std::string_view name, Dim3& out) {
  // A launch's grid or block is what matching compares: one that is not three counts is refused, since
  // reading part of it would give the kernel another identity (or swallow what follows it).
  const char* at = nullptr;
  if (value.current_location().get(at) != simdjson::SUCCESS) at = nullptr;
  od::array arr;
  if (value.get_array().get(arr) != simdjson::SUCCESS) return;
  std::uint32_t* dims[3] = {&out.x, &out.y, &out.z};
  int i = 0;
  bool counts = true;
  for (auto element_result : arr) {
    od::value element;
    if (auto e = std::move(element_result).get(element)) fail_json(value, start, e, "");
    std::uint64_t v = 0;
    if (i < 3 && read_uint(element, start, v)) *dims[i] = to_u32(v);
    else counts = false;
    ++i;
  }
  if (i != 3 || !counts)
    fail_at(index_of(at, start), fmt::format("malformed event: \"{}\" is not [x, y, z] of non-negative integers "
                                             "({} elements)", name, i));
}

void EventParser::parse_args(od::value& value, std::size_t start, ArgsNeeded needed, EventArgs& args) {
  od::object obj;
  if (value.get_object().get(obj) != simdjson::SUCCESS) return;  // args that are not an object carry nothing
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) fail_json(value, start, e, "in \"args\": ");
    const ArgKey key = arg_key(reinterpret_cast<const char*>(field.key().raw()));
    od::value& v = field.value();
    std::uint64_t n = 0;
    switch (key) {
      case ArgKey::kExternalId: read_uint(v, start, args.external_id); break;
      case ArgKey::kSequenceNumber:
        if (read_uint(v, start, n)) args.sequence_nr = static_cast<std::int64_t>(n);
        break;
      case ArgKey::kFwdThreadId: read_uint(v, start, args.forward_thread); break;
      case ArgKey::kCorrelation: read_uint(v, start, args.correlation); break;
      case ArgKey::kContext: read_uint(v, start, args.context); break;
      case ArgKey::kDevice:
        if (read_uint(v, start, n)) args.device = n;
        break;
      case ArgKey::kStream:
        if (read_uint(v, start, n)) args.stream = n;
        break;
      case ArgKey::kSharedMemory:
        if (read_uint(v, start, n)) args.shared_mem = to_u32(n);
        break;
      case ArgKey::kRegisters:
        if (read_uint(v, start, n)) args.registers = to_u32(n);
        break;
      case ArgKey::kGrid: read_dim3(v, start, "grid", args.grid); break;
      case ArgKey::kBlock: read_dim3(v, start, "block", args.block); break;
      case ArgKey::kGraphId: read_uint(v, start, args.graph_id); break;
      case ArgKey::kGraphNodeId: read_uint(v, start, args.graph_node); break;
      case ArgKey::kBytes: read_uint(v, start, args.bytes); break;
      case ArgKey::kName: args.name = read_string(v, start); break;
      case ArgKey::kLabels: args.labels = read_string(v, start); break;
      case ArgKey::kInputDims:
      case ArgKey::kInputType: {
        od::array a;
        std::string_view raw;
        if (args.communication && v.get_array().get(a) == simdjson::SUCCESS && a.raw_json().get(raw) == simdjson::SUCCESS)
          (key == ArgKey::kInputDims ? args.input_dims : args.input_types) = raw;
        break;
      }
      case ArgKey::kInMsgNelems:
      case ArgKey::kGroupSize:
        if (args.communication && read_uint(v, start, n) && n <= static_cast<std::uint64_t>(INT64_MAX))
          (key == ArgKey::kInMsgNelems ? args.msg_elements : args.group_size) = static_cast<std::int64_t>(n);
        break;
      case ArgKey::kDtype:
      case ArgKey::kProcessGroupName:
      case ArgKey::kProcessGroupDesc:
      case ArgKey::kCollectiveName:
        if (args.communication) {
          std::string_view& to = key == ArgKey::kDtype              ? args.dtype
                                 : key == ArgKey::kProcessGroupName ? args.process_group
                                 : key == ArgKey::kProcessGroupDesc ? args.process_group_desc
                                                                    : args.collective;
          to = read_string(v, start);
        }
        break;
      case ArgKey::kIgnored:
      case ArgKey::kAfterAutogradLink:
      case ArgKey::kOther: break;
    }
    if (reading_stops_after(key, needed, args)) return;
  }
}

// Reads the keys an event has in any order. Torch writes "args" last and puts "External id" first in it
// (and "correlation" before the launch's other arguments), so for operators and launches the reading
// stops there: the shapes and other arguments that follow are not visited, which is most of a
// record_shapes trace's bytes. Unvisited values are checked only as far as simdjson's first stage
// checks a document (strings, encoding, structural characters); the scan that cut the event out of the
// array has already checked that its brackets balance.
bool EventParser::parse_event(od::document& doc, std::size_t start, Event& ev) {
  od::object obj;
  if (auto e = doc.get_object().get(obj)) fail_json(doc, start, e, "an event must be a JSON object: ");
  enum : unsigned { kPh = 1, kCat = 2, kName = 4, kPid = 8, kTid = 16, kTs = 32, kDur = 64, kAll = 127 };
  unsigned seen = 0;
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) fail_json(doc, start, e, "");
    od::value& v = field.value();
    switch (event_key(reinterpret_cast<const char*>(field.key().raw()))) {
      case EventKey::kPh:
        ev.ph = read_string(v, start);
        seen |= kPh;
        if (skipped_early(ev)) return false;
        break;
      case EventKey::kCat:
        ev.cat = read_string(v, start);
        ev.has_cat = true;
        ev.cls = class_of(ev.cat);
        seen |= kCat;
        if (skipped_early(ev)) return false;
        break;
      case EventKey::kName: ev.name = read_string(v, start), seen |= kName; break;
      case EventKey::kPid: read_id(v, start, ev.pid), seen |= kPid; break;
      case EventKey::kTid: read_id(v, start, ev.tid), seen |= kTid; break;
      case EventKey::kTs: ev.ts = read_time(v, start, "ts"), seen |= kTs; break;
      case EventKey::kDur: ev.dur = read_time(v, start, "dur"), seen |= kDur; break;
      case EventKey::kId: read_uint(v, start, ev.flow_id); break;
      case EventKey::kArgs: {
        ArgsNeeded needed = ArgsNeeded::kAll;
        // torch writes the name before the args; a collective's arguments follow its External id.
        ev.args.communication = (seen & kName) != 0 && ev.has_cat &&
                                (ev.cls == EventClass::kCpuOp || ev.cls == EventClass::kUserAnnotation) &&
                                is_communication_range(ev.name);
        if (!ev.args.communication && ev.has_cat) {
          switch (ev.cls) {
            case EventClass::kCpuOp: needed = ArgsNeeded::kUpToAutogradLink; break;
            case EventClass::kUserAnnotation: needed = ArgsNeeded::kUpToExternalId; break;
            case EventClass::kRuntime:
            case EventClass::kDriver: needed = ArgsNeeded::kUpToCorrelation; break;
            default: break;
          }
        }
        parse_args(v, start, needed, ev.args);
        if (seen == kAll) return true;
        break;
      }
      case EventKey::kOther: break;
    }
  }
  return true;
}


// Threads that parse batches and take them into the timeline in the order they were submitted. Whichever
// thread finds the oldest batch parsed merges it, one merge at a time, so the reader's own thread only cuts
// events (and faults the file in): merging, a fifth of the read's work, runs on whichever core is free
// instead of in series with the cutting.
class BatchPipeline {
 public:
  using Merge = std::function<void(EventBatch&)>;
  // The threads start with the first batch submitted: a file read in one batch starts none.
  BatchPipeline(const std::string& path, unsigned threads, Merge merge)
      : path_(path), threads_wanted_(threads), merge_(std::move(merge)) {}
  ~BatchPipeline() { stop(); }
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // Drops the batches not yet parsed and joins the threads, a merge under way finishing first: called
  // before what merging writes is destroyed.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  void submit(std::shared_ptr<EventBatch> batch) {
    if (threads_.empty())
      for (unsigned i = 0; i < threads_wanted_; ++i) threads_.emplace_back([this] { run(); });
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(batch);
      unmerged_.push_back(std::move(batch));
    }
    work_.notify_one();
  }

  // Waits until at most `n` submitted batches are not yet in the timeline. Rethrows the first error, in
  // file order, of parsing a batch or merging it: merging stops at it.
  void wait_until_unmerged_at_most(std::size_t n) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return error_ || unmerged_locked() <= n; });
    if (error_) std::rethrow_exception(error_);
  }
  // No batch is being parsed or merged: the caller may merge one itself.
  bool idle() {
    std::lock_guard lock(mutex_);
    return unmerged_locked() == 0 && !error_;
  }
  // A merged batch to fill again, or a new one.
  std::shared_ptr<EventBatch> spare() {
    std::lock_guard lock(mutex_);
    if (spare_.empty()) return std::make_shared<EventBatch>();
    std::shared_ptr<EventBatch> batch = std::move(spare_.back());
    spare_.pop_back();
    return batch;
  }
  // The file offset before which every byte's events are in the timeline.
  std::uint64_t merged_up_to() {
    std::lock_guard lock(mutex_);
    return merged_up_to_;
  }

 private:
  std::size_t unmerged_locked() const { return unmerged_.size() + (merging_ ? 1 : 0); }

  void run() {
    EventParser parser(path_);
    for (;;) {
      std::shared_ptr<EventBatch> batch;
      {
        std::unique_lock lock(mutex_);
        work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        parser.parse(*batch);
      } catch (...) {
        batch->error = std::current_exception();
      }
      std::unique_lock lock(mutex_);
      batch->parsed = true;
      merge_parsed(lock);
    }
  }

  // Merges the oldest batches while they are parsed, unless another thread is merging (it goes on with
  // them when it is done).
  void merge_parsed(std::unique_lock<std::mutex>& lock) {
    while (!merging_ && !error_ && !stop_ && !unmerged_.empty() && unmerged_.front()->parsed) {
      std::shared_ptr<EventBatch> batch = std::move(unmerged_.front());
      unmerged_.pop_front();
      merging_ = true;
      lock.unlock();
      std::exception_ptr error = batch->error;
      if (!error) {
        try {
          merge_(*batch);
        } catch (...) {
          error = std::current_exception();
        }
      }
      const std::uint64_t end = batch->base.byte_offset + batch->size;
      if (!error) batch->clear();
      lock.lock();
      merging_ = false;
      if (error) {
        error_ = error;
      } else {
        merged_up_to_ = end;
        spare_.push_back(std::move(batch));
      }
      done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<std::shared_ptr<EventBatch>> queue_;     // submitted, not yet taken by a thread
  std::deque<std::shared_ptr<EventBatch>> unmerged_;  // submitted, not yet merged, oldest first
  std::vector<std::shared_ptr<EventBatch>> spare_;   // merged, their buffers kept for reuse
  bool merging_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::uint64_t merged_up_to_ = 0;
  const std::string& path_;
  unsigned threads_wanted_;
  Merge merge_;
  std::vector<std::thread> threads_;
};

unsigned parse_threads(unsigned asked) {
  if (asked != 0) return asked;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
}

class KinetoReader {
 public:
  KinetoReader(const std::string& path, const KinetoReadOptions& options, const ReadProgress& progress)
      : in_(path, options.chunk_bytes, options.access), options_(options), progress_(progress),
        next_progress_(options.progress_every_bytes), threads_(parse_threads(options.parse_threads)),
        workers_(in_.path(), threads_, [this](EventBatch& batch) { merge_batch(batch); }) {}
  // The threads merge into this reader's tables: they stop before the tables go.
  ~KinetoReader() { workers_.stop(); }
  KinetoReader(const KinetoReader&) = delete;
  KinetoReader& operator=(const KinetoReader&) = delete;

  Timeline read(KinetoReadStats* stats);

 private:
  // ---- input plumbing -------------------------------------------------------------------------
  std::size_t refill(std::size_t keep_from);
  bool skip_ws();
  // An error found by the scan: the events before it go into the timeline first, so that a malformed
  // one among them is the error reported, as it comes first in the file.
  [[noreturn]] void fail_at(std::size_t i, std::string_view message) {
    const InputPosition at = in_.position_of(i);
    finish_batches();
    throw InputError(in_.path(), std::string(message), at);
  }

  // ---- top level ------------------------------------------------------------------------------
  // Walks the items of the object or array whose opening bracket is at p_, checking the commas between
  // them (item names one in the errors), and calls read_item(first) at each item's first byte.
  template <class ReadItem>
  void read_items(char close, std::string_view truncated, std::string_view item, ReadItem&& read_item);
  void read_top_object();
  void read_event_array();
  std::string read_key();
  void read_top_value(const std::string& key);
  void parse_top_value(const std::string& key, std::string_view text, const InputPosition& where);
  void flatten_metadata(const std::string& prefix, od::value value, int depth);
  std::string scalar_text(od::value& value);
  void read_device_properties(od::value value);

  // ---- events ---------------------------------------------------------------------------------
  void read_event();
  // The events cut since the last flush go to the pipeline as one batch; called before the window moves.
  void flush_batch();
  // Takes a parsed batch's events into the timeline: on a pipeline thread, the batches in file order.
  void merge_batch(EventBatch& batch);
  // Submits the batch being cut and waits until every batch is in the timeline; rethrows the first error.
  void finish_batches();
  void handle_event(const EventBatch& batch, const Event& ev);
  int category_index(std::string_view cat);
  std::uint64_t resolve_id(const IdValue& id, bool is_pid, std::uint64_t pid_for_thread);
  StrId intern(std::string_view text);

  void add_kernel(const Event& ev, EventClass cls, std::int64_t start, std::int64_t end);
  void add_launch(const Event& ev, std::int64_t start, std::int64_t end);
  void add_range(const Event& ev, Category& cat, std::int64_t start, std::int64_t end);
  void add_process_metadata(const Event& ev);
  void add_communication_args(const EventArgs& args, std::uint32_t row);

  void reserve_tables();
  void link_kernels_to_launch_processes();
  void link_stream_ranges_to_processes();
  void link_forward_backward_flows();
  void nest_python_module_ranges();
  void finish_metadata();

  ChunkedInput in_;
  KinetoReadOptions options_;
  const ReadProgress& progress_;
  std::uint64_t next_progress_;
  std::size_t p_ = 0;  // cursor into in_.data()
  bool saw_trace_events_ = false;
  std::uint64_t events_ = 0;

  // Batches: the one being cut (its events' spans, from batch_first_ in the window); the pipeline holds
  // those submitted and the spare ones whose buffers are reused.
  unsigned threads_;
  std::size_t batch_first_ = 0;
  std::vector<std::pair<std::size_t, std::size_t>> spans_;
  BatchPipeline workers_;  // after in_, whose path it reads
  std::optional<EventParser> final_parser_;  // for a last batch parsed on this thread (flush_batch)

  Timeline tl_;
  od::parser parser_;  // top-level values
  std::vector<Category> categories_;
  std::uint64_t events_without_phase_ = 0;
  std::uint64_t ignored_phases_[256] = {};  // events of phases other than X and M, by the phase's letter
  std::unordered_map<std::string, std::uint64_t> named_ids_;
  std::vector<FlowEnd> flow_ends_;
  std::vector<std::uint32_t> python_module_ranges_;  // python_function "nn.Module: <Class>_<n>" ranges
  bool saw_module_annotation_ = false;              // a user_annotation "nn.Module: <path>" (opprof's hooks)

  // Names repeat heavily (a few thousand distinct ones among millions of events), and a kernel's name
  // can be a kilobyte of template arguments: a direct-mapped cache keyed by a few sampled bytes answers
  // most look-ups with one memcmp instead of hashing the whole name.
  struct InternedName {
    const char* data = nullptr;  // the StringTable's copy, stable for its lifetime
    std::size_t size = 0;
    StrId id = kNoString;
  };
  static constexpr std::size_t kNameCacheSlots = 4096;
  std::vector<InternedName> name_cache_ = std::vector<InternedName>(kNameCacheSlots);
};

StrId KinetoReader::intern(std::string_view text) {
  std::uint64_t key = text.size() * 0x9e3779b97f4a7c15ULL;
  if (text.size() >= 8) {
    std::uint64_t head, middle, tail;
    std::memcpy(&head, text.data(), 8);
    std::memcpy(&middle, text.data() + text.size() / 2 - 4, 8);
    std::memcpy(&tail, text.data() + text.size() - 8, 8);
    key ^= head * 0xff51afd7ed558ccdULL ^ (middle * 0xc4ceb9fe1a85ec53ULL) ^ (tail + (tail >> 29));
  } else {
    for (char c : text) key = (key ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  }
  key ^= key >> 32;
  InternedName& slot = name_cache_[key & (kNameCacheSlots - 1)];
  if (slot.size == text.size() && slot.data != nullptr && std::memcmp(slot.data, text.data(), text.size()) == 0)
    return slot.id;
  const StrId id = tl_.strings.intern(text);
  const std::string_view stored = tl_.strings.view(id);
  slot = InternedName{stored.data(), stored.size(), id};
  return id;
}

// ---- input plumbing ---------------------------------------------------------------------------

std::size_t KinetoReader::refill(std::size_t keep_from) {
  flush_batch();
  std::size_t shift = 0;
  try {
    shift = in_.refill(keep_from);
  } catch (const InputError&) {
    finish_batches();  // a malformed event before the unreadable bytes is the first error
    throw;
  }
  if (progress_ && in_.bytes_read() >= next_progress_) {
    progress_(in_.bytes_read(), in_.file_bytes());
    next_progress_ = in_.bytes_read() + options_.progress_every_bytes;
  }
  return shift;
}

bool KinetoReader::skip_ws() {
  for (;;) {
    const char* d = in_.data();
    const std::size_t n = in_.size();
    while (p_ < n && is_ws(d[p_])) ++p_;
    if (p_ < n) return true;
    if (in_.eof()) return false;
    p_ -= refill(p_);
  }
}

// ---- top level --------------------------------------------------------------------------------

Timeline KinetoReader::read(KinetoReadStats* stats) {
  if (!skip_ws()) fail_at(p_, "empty file: expected a torch.profiler trace (a JSON object with \"traceEvents\")");
  // A UTF-8 byte order mark is not JSON, but some editors write one.
  if (in_.offset_of(p_) == 0 && in_.data()[p_] == '\xEF') {
    while (in_.size() - p_ < 3 && !in_.eof()) p_ -= refill(p_);
    if (in_.size() - p_ >= 3 && std::memcmp(in_.data() + p_, "\xEF\xBB\xBF", 3) == 0) {
      p_ += 3;
      if (!skip_ws()) fail_at(p_, "empty file: expected a torch.profiler trace");
    }
  }
  reserve_tables();

  const char c = in_.data()[p_];
  if (c == '{') {
    read_top_object();
  } else if (c == '[') {
    // Chrome's other trace format: the bare array of events.
    read_event_array();
    saw_trace_events_ = true;
    if (skip_ws()) fail_at(p_, "unexpected data after the end of the trace's event array");
  } else {
    fail_at(p_, fmt::format("expected '{{' at the start of the trace, found {}: not a JSON trace",
                            describe_byte(c)));
  }
  if (!saw_trace_events_)
    fail_at(p_, "no \"traceEvents\" array: this JSON is not a torch.profiler (Chrome) trace");

  link_kernels_to_launch_processes();
  link_stream_ranges_to_processes();
  link_forward_backward_flows();
  nest_python_module_ranges();
  finish_metadata();
  if (progress_) progress_(in_.bytes_read(), in_.file_bytes());
  if (stats != nullptr) {
    stats->bytes = in_.bytes_read();
    stats->events = events_;
  }
  return std::move(tl_);
}

void KinetoReader::reserve_tables() {
  // Capacity that is reserved but never written costs address space, not memory, so reserve for the
  // upper end of what traces hold per byte (torch traces: one kernel per 2-3 KB, one range per 0.6-1.2 KB)
  // and skip the copies and the doubled peak of growing a vector of a million rows.
  std::uint64_t expected = in_.file_bytes();
  if (in_.gzipped()) expected = in_.gzip_announced_bytes() >= in_.file_bytes() ? in_.gzip_announced_bytes() : 0;
  if (expected < (std::uint64_t{8} << 20)) return;
  tl_.kernels.reserve(static_cast<std::size_t>(expected / 1500));
  tl_.launches.reserve(static_cast<std::size_t>(expected / 1500));
  tl_.ranges.reserve(static_cast<std::size_t>(expected / 450));
}

template <class ReadItem>
void KinetoReader::read_items(char close, std::string_view truncated, std::string_view item, ReadItem&& read_item) {
  ++p_;  // the opening bracket
  for (bool first = true;; first = false) {
    if (!skip_ws()) fail_at(in_.size(), truncated);
    const char c = in_.data()[p_];
    if (c == close) {  // one right after a ',' is left to read_item to name
      ++p_;
      return;
    }
    if (!first) {
      if (c != ',') fail_at(p_, fmt::format("expected ',' or '{}' after {}, found {}", close, item, describe_byte(c)));
      ++p_;
      if (!skip_ws()) fail_at(in_.size(), truncated);
    }
    read_item(first);
  }
}

void KinetoReader::read_top_object() {
  read_items('}', kTruncatedTop, "a top-level value", [&](bool) {
    const char c = in_.data()[p_];
    if (c != '"')
      fail_at(p_, fmt::format("expected a key string in the trace's top-level object, found {}", describe_byte(c)));
    const std::string key = read_key();
    if (!skip_ws()) fail_at(in_.size(), kTruncatedTop);
    if (in_.data()[p_] != ':')
      fail_at(p_, fmt::format("expected ':' after the key \"{}\", found {}", key, describe_byte(in_.data()[p_])));
    ++p_;
    if (!skip_ws()) fail_at(in_.size(), kTruncatedTop);
    if (key == "traceEvents") {
      if (in_.data()[p_] != '[')
        fail_at(p_, fmt::format("\"traceEvents\" must be an array, found {}", describe_byte(in_.data()[p_])));
      read_event_array();
      saw_trace_events_ = true;
    } else {
      read_top_value(key);
    }
  });
  if (skip_ws()) fail_at(p_, "unexpected data after the end of the trace's top-level object");
}

std::string KinetoReader::read_key() {
  std::string key;
  std::size_t i = p_ + 1;  // past the opening quote
  for (;;) {
    if (i + 1 >= in_.size() && !in_.eof()) {  // an escape needs the byte after the backslash too
      const std::size_t shift = refill(p_);
      p_ -= shift;
      i -= shift;
      continue;
    }
    if (i >= in_.size()) fail_at(in_.size(), kTruncatedTop);
    const char c = in_.data()[i];
    if (c == '"') break;
    if (c == '\\' && i + 1 < in_.size()) {
      const char e = in_.data()[i + 1];
      // JSON's one-letter escapes; \u is kept as written, as no key opprof reads needs it.
      static constexpr std::string_view kLetters = "ntrbf", kBytes = "\n\t\r\b\f";
      if (e == 'u')
        key.append("\\u");
      else if (const std::size_t letter = kLetters.find(e); letter != std::string_view::npos)
        key.push_back(kBytes[letter]);
      else
        key.push_back(e);
      i += 2;
      continue;
    }
    key.push_back(c);
    ++i;
  }
  p_ = i + 1;
  return key;
}

void KinetoReader::read_top_value(const std::string& key) {
  const InputPosition where = in_.position_of(p_);
  std::string text;
  bool kept = true;
  auto keep = [&](std::size_t from, std::size_t to) {
    if (!kept) return;
    if (text.size() + (to - from) > kMaxTopValueBytes) {
      kept = false;
      std::string().swap(text);
      return;
    }
    text.append(in_.data() + from, to - from);
  };

  const char c = in_.data()[p_];
  if (c == '{' || c == '[') {
    // Scanned like an event, but what was scanned is copied out and released, so a large value does not
    // grow the window.
    BracketScan scan;
    scan.pos = p_;
    std::size_t from = p_;
    for (;;) {
      const std::size_t end = scan_to_value_end(in_.data(), in_.size(), scan);
      if (end != kNoEnd) {
        keep(from, end);
        p_ = end;
        break;
      }
      if (in_.eof()) fail_at(in_.size(), kTruncatedTop);
      keep(from, scan.pos);
      scan.pos -= refill(scan.pos);
      from = scan.pos;
      p_ = scan.pos;
    }
  } else {
    // A string or another scalar: short, so the window keeps it whole.
    std::size_t i = p_;
    bool in_string = c == '"';
    if (in_string) ++i;
    for (;;) {
      if (i + 1 >= in_.size() && !in_.eof()) {
        const std::size_t shift = refill(p_);
        p_ -= shift;
        i -= shift;
        continue;
      }
      if (i >= in_.size()) {
        if (in_string) fail_at(in_.size(), kTruncatedTop);
        break;
      }
      const char b = in_.data()[i];
      if (in_string) {
        if (b == '\\') {
          i += 2;
          continue;
        }
        ++i;
        if (b == '"') break;
      } else {
        if (b == ',' || b == '}' || b == ']' || is_ws(b)) break;
        ++i;
      }
    }
    keep(p_, i);
    p_ = i;
  }
  if (kept)
    parse_top_value(key, text, where);
  else
    tl_.metadata["trace." + snake_case(key)] = "(skipped: larger than 16 MB)";
}

// The metadata values below are small and read once: errors leave through an exception, which
// parse_top_value turns into an InputError at the value's position.
void check(simdjson::error_code error) {
  if (error != simdjson::SUCCESS) throw simdjson::simdjson_error(error);
}

std::string KinetoReader::scalar_text(od::value& value) {
  od::json_type type;
  check(value.type().get(type));
  switch (type) {
    case od::json_type::string: {
      std::string_view s;
      check(value.get_string().get(s));
      return std::string(s);
    }
    case od::json_type::number: {
      od::number n;  // parsed only to validate it; the text is what is kept, exactly as written
      const std::string_view text = trim(value.raw_json_token());
      check(value.get_number().get(n));
      return std::string(text);
    }
    case od::json_type::boolean: {
      bool b = false;
      check(value.get_bool().get(b));
      return b ? "true" : "false";
    }
    case od::json_type::null: {
      bool is_null = false;
      check(value.is_null().get(is_null));
      return {};
    }
    case od::json_type::array:
    case od::json_type::object: {
      std::string_view raw;
      check(simdjson::to_json_string(value).get(raw));
      return std::string(trim(raw));
    }
  }
  return {};
}

void KinetoReader::flatten_metadata(const std::string& prefix, od::value value, int depth) {
  od::json_type type;
  check(value.type().get(type));
  if (type == od::json_type::object && depth < 4) {
    od::object obj;
    check(value.get_object().get(obj));
    for (auto field_result : obj) {
      od::field field;
      check(std::move(field_result).get(field));
      std::string_view key;
      check(field.unescaped_key().get(key));
      flatten_metadata(prefix + "." + snake_case(key), field.value(), depth + 1);
    }
    return;
  }
  tl_.metadata[prefix] = scalar_text(value);
}

void KinetoReader::read_device_properties(od::value value) {
  od::array devices;
  check(value.get_array().get(devices));
  std::size_t index = 0;
  for (auto device_result : devices) {
    od::value device;
    check(std::move(device_result).get(device));
    od::object obj;
    check(device.get_object().get(obj));
    std::string id = std::to_string(index++);
    std::vector<std::pair<std::string, std::string>> fields;
    for (auto field_result : obj) {
      od::field field;
      check(std::move(field_result).get(field));
      std::string_view key;
      check(field.unescaped_key().get(key));
      std::string text = scalar_text(field.value());
      if (key == "id")
        id = std::move(text);
      else
        fields.emplace_back(snake_case(key), std::move(text));
    }
    for (auto& [key, text] : fields) tl_.metadata[fmt::format("device.{}.{}", id, key)] = std::move(text);
  }
}

void KinetoReader::parse_top_value(const std::string& key, std::string_view text, const InputPosition& where) {
  // Wrapped in an array so that a scalar is an ordinary value to On Demand (a scalar document is not).
  std::string wrapped;
  wrapped.reserve(text.size() + 2);
  wrapped.push_back('[');
  wrapped.append(text);
  wrapped.push_back(']');
  const simdjson::padded_string padded(wrapped);
  if (key == "distributedInfo") {
    // pid 0: the trace's own process (distributedInfo does not name it).
    for (const ProcessGroupMark& g : process_groups_of_distributed_info(text))
      tl_.process_groups.push_back(ProcessGroup{0, intern(g.name), g.desc.empty() ? kNoString : intern(g.desc),
                                                g.backend.empty() ? kNoString : intern(g.backend),
                                                static_cast<std::int32_t>(std::min<std::int64_t>(g.size, INT32_MAX)),
                                                g.ranks.empty() ? kNoString : intern(g.ranks)});
  }
  try {
    od::document doc;
    check(parser_.iterate(padded).get(doc));
    od::array outer;
    check(doc.get_array().get(outer));
    for (auto value_result : outer) {
      od::value value;
      check(std::move(value_result).get(value));
      if (key == "deviceProperties")
        read_device_properties(value);
      else if (key == "baseTimeNanoseconds")
        tl_.metadata["base_time_ns"] = scalar_text(value);
      else
        flatten_metadata("trace." + snake_case(key), value, 0);
      break;
    }
  } catch (const simdjson::simdjson_error& e) {
    InputPosition at = where;
    std::string what = simdjson::error_message(e.error());
    if (auto problem = find_json_problem(text)) {
      // Move the value's position forward to the problem's byte.
      const std::string_view before = text.substr(0, problem->offset);
      const auto newlines = static_cast<std::uint64_t>(std::count(before.begin(), before.end(), '\n'));
      at.byte_offset += problem->offset;
      at.line += newlines;
      at.column = newlines == 0 ? at.column + problem->offset : problem->offset - before.rfind('\n');
      what = std::move(problem->message);
    }
    throw InputError(in_.path(), fmt::format("malformed value of the top-level key \"{}\": {}", key, what), at);
  }
}

// ---- the event array --------------------------------------------------------------------------

void KinetoReader::read_event_array() {
  read_items(']', kTruncatedInArray, "an event", [&](bool first) {
    const char c = in_.data()[p_];
    if (c != '{')
      fail_at(p_, first ? fmt::format("expected an event object ('{{') or ']' in \"traceEvents\", found {}",
                                      describe_byte(c))
                        : fmt::format("expected an event object ('{{') after ',', found {}", describe_byte(c)));
    read_event();
  });
  finish_batches();
}

void KinetoReader::read_event() {
  std::size_t start = p_;
  BracketScan scan;
  scan.pos = start;
  for (;;) {
    const std::size_t end = scan_to_value_end(in_.data(), in_.size(), scan);
    if (end != kNoEnd) {
      ++events_;
      if (spans_.empty()) batch_first_ = start;
      spans_.emplace_back(start - batch_first_, end - start);
      p_ = end;
      return;
    }
    if (in_.eof()) fail_at(start, kTruncatedInEvent);
    // The event straddles the window's end: keep it from its start and scan on where the scan stopped.
    const std::size_t shift = refill(start);
    start -= shift;
    scan.pos -= shift;
    p_ = start;
  }
}

void KinetoReader::flush_batch() {
  if (spans_.empty()) return;
  std::shared_ptr<EventBatch> batch = workers_.spare();
  const auto& [last_start, last_length] = spans_.back();
  const std::size_t n = last_start + last_length;
  if (in_.mapped())
    batch->view(in_.data() + batch_first_, n, in_.readable_from(batch_first_), in_.position_of(batch_first_));
  else
    batch->fill(in_.data() + batch_first_, n, in_.position_of(batch_first_));
  batch->spans.swap(spans_);
  if (in_.eof() && workers_.idle()) {
    // The last batch, and none before it still being parsed or merged: parsed and merged here, for no
    // other thread could overlap it with anything.
    if (!final_parser_) final_parser_.emplace(in_.path());
    final_parser_->parse(*batch);
    merge_batch(*batch);
    in_.release_before(batch->base.byte_offset + batch->size);
    return;
  }
  workers_.submit(std::move(batch));
  // Two batches per thread keep every core busy while this thread cuts; more would only hold memory.
  workers_.wait_until_unmerged_at_most(2 * std::size_t{threads_});
  in_.release_before(workers_.merged_up_to());  // the merged batches' pages are not read again
}

void KinetoReader::merge_batch(EventBatch& batch) {
  for (const Event& ev : batch.events) handle_event(batch, ev);
  for (const auto& [cat, n] : batch.ignored_by_category)
    categories_[static_cast<std::size_t>(category_index(cat))].ignored += n;
  for (std::size_t c = 0; c < 256; ++c) ignored_phases_[c] += batch.ignored_phases[c];
}

void KinetoReader::finish_batches() {
  flush_batch();
  workers_.wait_until_unmerged_at_most(0);
}

int KinetoReader::category_index(std::string_view cat) {
  // A trace has a dozen categories; a linear look-up beats hashing each event's.
  for (std::size_t i = 0; i < categories_.size(); ++i) {
    const std::string& known = categories_[i].text;
    if (known.size() == cat.size() && (cat.empty() || std::memcmp(known.data(), cat.data(), cat.size()) == 0))
      return static_cast<int>(i);
  }
  Category c;
  c.text = std::string(cat);
  c.cls = classify_category(cat);
  categories_.push_back(std::move(c));
  return static_cast<int>(categories_.size() - 1);
}

void KinetoReader::handle_event(const EventBatch& batch, const Event& ev) {
  if (ev.ph.empty()) {
    ++events_without_phase_;
    return;
  }
  if (ev.ph == "M") {
    add_process_metadata(ev);
    return;
  }
  if (ev.ph == "s" || ev.ph == "f") {
    if (ev.has_cat && ev.ts && ev.cls == EventClass::kForwardBackwardFlow) {
      const std::uint64_t pid = resolve_id(ev.pid, true, 0);
      flow_ends_.push_back({ev.flow_id, pid, resolve_id(ev.tid, false, pid), *ev.ts, ev.ph == "s"});
    } else {
      ++ignored_phases_[static_cast<unsigned char>(ev.ph[0])];
    }
    return;
  }
  if (ev.ph != "X") return;
  if (!ev.has_cat) {
    ++events_without_phase_;
    return;
  }
  Category& cat = categories_[static_cast<std::size_t>(category_index(ev.cat))];
  if (cat.cls == EventClass::kIgnored) {
    ++cat.ignored;
    return;
  }
  if (!ev.ts)
    throw InputError(in_.path(),
                     fmt::format("event \"{}\" (category {}) has no \"ts\"", ev.name.substr(0, 80), cat.text),
                     batch.position_of(ev.offset));
  const std::int64_t begin = *ev.ts;
  const std::int64_t end = begin + ev.dur.value_or(0);
  switch (cat.cls) {
    case EventClass::kKernel:
    case EventClass::kMemcpy:
    case EventClass::kMemset: add_kernel(ev, cat.cls, begin, end); break;
    case EventClass::kRuntime:
    case EventClass::kDriver: add_launch(ev, begin, end); break;
    case EventClass::kCpuOp:
    case EventClass::kUserAnnotation:
    case EventClass::kGpuUserAnnotation:
    case EventClass::kPythonFunction: add_range(ev, cat, begin, end); break;
    case EventClass::kForwardBackwardFlow:
    case EventClass::kIgnored: break;
  }
}

std::uint64_t KinetoReader::resolve_id(const IdValue& id, bool is_pid, std::uint64_t pid_for_thread) {
  if (!id.present) return 0;
  if (id.numeric) return static_cast<std::uint64_t>(id.number);
  // A named pid/tid on an event that is imported anyway: give the name a stable id of its own and say so
  // in the metadata, rather than folding it into process or thread 0.
  std::string key = std::string(is_pid ? "p:" : "t:") + std::string(id.text);
  auto [it, inserted] = named_ids_.try_emplace(std::move(key), kFirstNamedId + named_ids_.size());
  if (inserted) {
    if (is_pid)
      tl_.metadata[fmt::format("process.{}.name", it->second)] = std::string(id.text);
    else
      tl_.metadata[fmt::format("thread.{}.{}.name", pid_for_thread, it->second)] = std::string(id.text);
  }
  return it->second;
}

void KinetoReader::add_kernel(const Event& ev, EventClass cls, std::int64_t start, std::int64_t end) {
  const ActivityKind kind = cls == EventClass::kKernel   ? ActivityKind::kKernel
                            : cls == EventClass::kMemcpy ? ActivityKind::kMemcpy
                                                         : ActivityKind::kMemset;
  // Kineto puts GPU rows under pid = device and tid = stream; the args say both again.
  const std::uint64_t device = ev.args.device ? *ev.args.device : resolve_id(ev.pid, true, 0);
  const std::uint64_t stream = ev.args.stream ? *ev.args.stream : resolve_id(ev.tid, false, device);
  KernelTable& k = tl_.kernels;
  const std::size_t row =
      k.add(kind, intern(ev.name), to_u32(device), to_u32(stream), start, end);
  k.context[row] = to_u32(ev.args.context);
  k.grid[row] = ev.args.grid;
  k.block[row] = ev.args.block;
  k.correlation[row] = ev.args.correlation;
  k.external_id[row] = ev.args.external_id;
  k.graph_id[row] = ev.args.graph_id;
  k.graph_node[row] = ev.args.graph_node;
  k.registers_per_thread[row] = ev.args.registers;
  k.shared_mem_bytes[row] = ev.args.shared_mem;
  k.bytes[row] = ev.args.bytes;
}

void KinetoReader::add_launch(const Event& ev, std::int64_t start, std::int64_t end) {
  const std::uint64_t pid = resolve_id(ev.pid, true, 0);
  const std::uint64_t tid = resolve_id(ev.tid, false, pid);
  LaunchTable& l = tl_.launches;
  const std::size_t row = l.add(intern(ev.name), to_u32(pid), tid, start, end, ev.args.correlation);
  l.external_id[row] = ev.args.external_id;
}

void KinetoReader::add_range(const Event& ev, Category& cat, std::int64_t start, std::int64_t end) {
  const EventClass cls = cat.cls;
  if (cat.id == kNoString) cat.id = tl_.strings.intern(cat.text);

  std::string_view text = ev.name;
  RangeKind kind = RangeKind::kOther;
  switch (cls) {
    case EventClass::kCpuOp:
      // torch 2.11 records the compiled graph's call as a cpu_op in some builds and as a user_annotation
      // in others: either way it is a region, not an operator.
      kind = starts_with(text, kCompiledRegionPrefix) || starts_with(text, kCompiledGraphCallPrefix)
                 ? RangeKind::kCompiledRegion
                 : RangeKind::kOperator;
      break;
    case EventClass::kUserAnnotation:
    case EventClass::kGpuUserAnnotation:
      kind = annotation_kind(text);
      if (kind == RangeKind::kModule) {
        text.remove_prefix(kModuleRangePrefix.size());
        saw_module_annotation_ = true;
      }
      break;
    default: break;  // python_function frames: kept, attribute nothing
  }

  RangeTable& r = tl_.ranges;
  std::size_t row = 0;
  if (cls == EventClass::kGpuUserAnnotation) {
    // Projected onto a stream: Kineto writes pid = device and tid = stream. The launching process is
    // linked after reading, through the CPU-side annotation with the same External id.
    const std::uint64_t device = ev.args.device ? *ev.args.device : resolve_id(ev.pid, true, 0);
    const std::uint64_t stream = ev.args.stream ? *ev.args.stream : resolve_id(ev.tid, false, device);
    row = r.add(kind, RangeScope::kStream, intern(text), cat.id, 0, stream, start, end, to_u32(device));
  } else {
    const std::uint64_t pid = resolve_id(ev.pid, true, 0);
    const std::uint64_t tid = resolve_id(ev.tid, false, pid);
    row = r.add(kind, RangeScope::kThread, intern(text), cat.id, to_u32(pid), tid, start, end);
  }
  r.external_id[row] = ev.args.external_id;
  r.sequence_nr[row] = ev.args.sequence_nr;
  r.forward_thread[row] = ev.args.forward_thread;
  if (cls == EventClass::kPythonFunction && starts_with(text, kModuleRangePrefix))
    python_module_ranges_.push_back(static_cast<std::uint32_t>(row));
  if (ev.args.communication) add_communication_args(ev.args, static_cast<std::uint32_t>(row));
}

void KinetoReader::add_communication_args(const EventArgs& a, std::uint32_t row) {
  CommunicationArgs c;
  c.range = row;
  if (a.msg_elements >= 0) {  // record_param_comms
    c.elements = a.msg_elements;
    if (const int size = element_bytes(a.dtype); size != 0 && c.elements <= INT64_MAX / size) c.bytes = c.elements * size;
  } else if (!a.input_dims.empty() && !a.input_types.empty()) {  // record_shapes
    const InputTensors t = input_tensors(a.input_dims, a.input_types);
    c.elements = t.elements;
    c.bytes = t.bytes;
    if (!t.dtype.empty()) c.dtype = intern(t.dtype);
  }
  if (c.dtype == kNoString && !a.dtype.empty()) c.dtype = intern(a.dtype);
  if (!a.process_group.empty()) c.process_group = intern(a.process_group);
  if (!a.process_group_desc.empty()) c.process_group_desc = intern(a.process_group_desc);
  if (a.group_size >= 0) c.group_size = static_cast<std::int32_t>(std::min<std::int64_t>(a.group_size, INT32_MAX));
  if (!a.collective.empty()) c.collective = intern(a.collective);
  if (c.elements < 0 && c.dtype == kNoString && c.process_group == kNoString && c.group_size < 0) return;  // nothing said
  tl_.communication_args.push_back(c);
}

void KinetoReader::add_process_metadata(const Event& ev) {
  if (!ev.pid.numeric) return;  // the profiler's own rows ("Spans", "Traces")
  if (ev.name == "process_name" && !ev.args.name.empty()) {
    tl_.metadata[fmt::format("process.{}.name", ev.pid.number)] = std::string(ev.args.name);
  } else if (ev.name == "process_labels" && !ev.args.labels.empty()) {
    tl_.metadata[fmt::format("process.{}.labels", ev.pid.number)] = std::string(ev.args.labels);
  } else if (ev.name == "thread_name" && !ev.args.name.empty() && ev.tid.numeric) {
    tl_.metadata[fmt::format("thread.{}.{}.name", ev.pid.number, ev.tid.number)] = std::string(ev.args.name);
  }
}

// ---- after the last event ---------------------------------------------------------------------

void KinetoReader::link_kernels_to_launch_processes() {
  // Kineto files kernels under pid = device. The process that launched one is the pid of the runtime or
  // driver call with the same correlation id.
  const LaunchTable& l = tl_.launches;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> by_correlation;
  by_correlation.reserve(l.size());
  for (std::size_t i = 0; i < l.size(); ++i)
    if (l.correlation[i] != kNoCorrelation) by_correlation.emplace_back(l.correlation[i], l.pid[i]);
  auto by_id = [](const auto& a, const auto& b) { return a.first < b.first; };
  // Launches arrive in correlation order within a thread, so this is usually sorted already.
  if (!std::is_sorted(by_correlation.begin(), by_correlation.end(), by_id))
    std::stable_sort(by_correlation.begin(), by_correlation.end(), by_id);

  KernelTable& k = tl_.kernels;
  for (std::size_t i = 0; i < k.size(); ++i) {
    const std::uint64_t corr = k.correlation[i];
    if (corr == kNoCorrelation) continue;
    auto it = std::lower_bound(by_correlation.begin(), by_correlation.end(), corr,
                               [](const auto& a, std::uint64_t c) { return a.first < c; });
    if (it != by_correlation.end() && it->first == corr) k.pid[i] = it->second;
  }
}

void KinetoReader::link_stream_ranges_to_processes() {
  // A gpu_user_annotation shares its External id with the user_annotation that the CPU recorded.
  RangeTable& r = tl_.ranges;
  std::unordered_map<std::uint64_t, std::uint32_t> pid_of_external;
  for (std::size_t i = 0; i < r.size(); ++i)
    if (r.scope(i) == RangeScope::kStream && r.external_id[i] != 0) pid_of_external.emplace(r.external_id[i], 0);
  if (pid_of_external.empty()) return;
  std::unordered_set<std::uint64_t> found;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r.scope(i) != RangeScope::kThread) continue;
    auto it = pid_of_external.find(r.external_id[i]);
    if (it != pid_of_external.end() && found.insert(it->first).second) it->second = r.pid(i);
  }
  for (std::size_t i = 0; i < r.size(); ++i)
    if (r.scope(i) == RangeScope::kStream && r.external_id[i] != 0) r.set_pid(i, pid_of_external[r.external_id[i]]);
}

void KinetoReader::link_forward_backward_flows() {
  if (flow_ends_.empty()) return;
  // A flow's ends sit at the start of the operator they mark: several operators can start at one
  // timestamp (an operator and the first one it calls), and the one autograd numbered is meant.
  struct Key {
    std::uint64_t pid, tid;
    std::int64_t ts;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      return std::hash<std::uint64_t>{}((k.pid * 0x9E3779B97F4A7C15ull) ^ (k.tid * 0xC2B2AE3D27D4EB4Full) ^
                                        static_cast<std::uint64_t>(k.ts));
    }
  };
  const RangeTable& r = tl_.ranges;
  std::unordered_map<Key, std::uint32_t, KeyHash> numbered;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r.scope(i) != RangeScope::kThread || r.sequence_nr[i] == kNoSequenceNr) continue;
    auto [it, inserted] = numbered.try_emplace(Key{r.pid(i), r.owner(i), r.start_ns[i]}, static_cast<std::uint32_t>(i));
    if (!inserted && r.end_ns[i] > r.end_ns[it->second]) it->second = static_cast<std::uint32_t>(i);  // the outer one
  }
  std::unordered_map<std::uint64_t, std::pair<std::uint32_t, std::uint32_t>> by_id;  // id -> (forward, backward)
  std::uint64_t unresolved = 0;
  for (const FlowEnd& f : flow_ends_) {
    auto it = numbered.find(Key{f.pid, f.tid, f.ts});
    if (it == numbered.end()) {
      ++unresolved;
      continue;
    }
    auto& link = by_id.try_emplace(f.id, kNoIndex, kNoIndex).first->second;
    (f.start ? link.first : link.second) = it->second;
  }
  std::vector<std::pair<std::uint64_t, AutogradLink>> links;
  for (const auto& [id, link] : by_id)
    if (link.first != kNoIndex && link.second != kNoIndex) links.push_back({id, {link.first, link.second}});
  std::sort(links.begin(), links.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [id, link] : links) tl_.autograd_links.push_back(link);
  if (unresolved != 0) tl_.metadata["trace.fwdbwd_flow_ends_without_operator"] = std::to_string(unresolved);
}

void KinetoReader::nest_python_module_ranges() {
  // with_modules / with_stack traces name each module call "nn.Module: <Class>_<n>" on the calling thread.
  // Without opprof's hooks (whose annotations carry the attribute path) they are the module ranges, their
  // path the chain of enclosing calls: "GPT2LMHeadModel_0/GPT2Model_0/GPT2Block_3".
  if (python_module_ranges_.empty() || saw_module_annotation_) return;
  RangeTable& r = tl_.ranges;
  std::vector<std::uint32_t> rows = python_module_ranges_;
  // Per thread by start, the enclosing range before the ranges it encloses.
  std::sort(rows.begin(), rows.end(), [&](std::uint32_t x, std::uint32_t y) {
    return std::tuple(r.pid(x), r.owner(x), r.start_ns[x], -r.end_ns[x], x) <
           std::tuple(r.pid(y), r.owner(y), r.start_ns[y], -r.end_ns[y], y);
  });
  struct Open {
    std::uint32_t row;
    std::string path;
  };
  std::vector<Open> stack;
  for (std::uint32_t row : rows) {
    while (!stack.empty() && (r.pid(stack.back().row) != r.pid(row) || r.owner(stack.back().row) != r.owner(row) ||
                              r.end_ns[stack.back().row] < r.end_ns[row] || r.end_ns[stack.back().row] <= r.start_ns[row]))
      stack.pop_back();
    std::string_view name = tl_.str(r.text[row]).substr(kModuleRangePrefix.size());
    std::string path = stack.empty() ? std::string(name) : stack.back().path + "/" + std::string(name);
    r.kind[row] = RangeKind::kModule;
    r.text[row] = tl_.strings.intern(path);
    stack.push_back({row, std::move(path)});
  }
  tl_.metadata["trace.module_paths"] = "python_function nn.Module events (with_modules), nested";
}

void KinetoReader::finish_metadata() {
  auto& m = tl_.metadata;
  m["source"] = "kineto";
  m["source.path"] = in_.path();
  m["trace.event_count"] = std::to_string(events_);
  for (const Category& c : categories_)
    if (c.ignored != 0) m["trace.ignored_events." + c.text] = std::to_string(c.ignored);
  if (events_without_phase_ != 0) m["trace.ignored_events.(no ph or cat)"] = std::to_string(events_without_phase_);
  // Flow arrows (s, f), instants (i), counters (C), ...: nothing opprof imports, but counted, not dropped.
  for (int c = 0; c < 256; ++c)
    if (ignored_phases_[c] != 0)
      m[fmt::format("trace.ignored_events.ph_{}", static_cast<char>(c))] = std::to_string(ignored_phases_[c]);
}

}  // namespace

Timeline read_kineto_trace(const std::string& path, const KinetoReadOptions& options, KinetoReadStats* stats,
                           const ReadProgress& progress) {
  KinetoReader reader(path, options, progress);
  return reader.read(stats);
}

}  // namespace detail

Timeline read_kineto_trace(const std::string& path, KinetoReadStats* stats, const ReadProgress& progress) {
  return detail::read_kineto_trace(path, detail::KinetoReadOptions{}, stats, progress);
}

}  // namespace opprof