#pragma once
// The one decoder of opprof tracer logs (format.hpp): walks the records of a log held in memory, checks
// every size against the bytes there are, and hands out typed records. Used by the reader
// (src/opprof/ingest/tracer_log.cpp) and opprof_trace_dump; header-only and free of opprof_core, like the
// format, so the dump tool builds without the engine.
//
// Errors are FormatError with the byte offset of what is wrong (the file header field, or the record's
// RecordHeader); a log cut inside a record (a crash) is not an error: next() stops before the cut record
// and truncated() says where.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tracer_log/format.hpp"

namespace opprof::tracelog {

class FormatError : public std::runtime_error {
 public:
  FormatError(std::size_t offset, const std::string& what) : std::runtime_error(what), offset_(offset) {}
  std::size_t offset() const noexcept { return offset_; }

 private:
  std::size_t offset_;
};

// Records whose payload has a variable tail, with the tail decoded.
struct StringEntry {
  std::uint32_t id;       // 1 .. RecordDecoder::max_string_id()
  std::string_view text;  // points into the log's bytes
};
struct GraphNode {
  GraphNodeRecord fixed;
  std::vector<StackEntry> stack;  // outermost first
};
struct CaptureLaunch {
  CaptureLaunchRecord fixed;
  std::vector<StackEntry> stack;  // outermost first
};
// The two window records share a payload struct; distinct types tell them apart in a visitor.
struct WindowStart {
  WindowRecord fixed;
};
struct WindowStop {
  WindowRecord fixed;
};
// A record type a newer minor version added: skipped by its size.
struct UnknownRecord {};

// The table of record types: alternative i is what a record of RecordType i decodes to (0: a type this
// version does not know), so the decoder needs no list of its own.
using RecordValue =
    std::variant<UnknownRecord, StringEntry, KernelRecord, MemcpyRecord, MemsetRecord, ApiCallRecord, ApiNameRecord,
                 NvtxPushRecord, NvtxPopRecord, NvtxStartRecord, NvtxEndRecord, NvtxMarkRecord, WindowStart, WindowStop,
                 GraphNode, GraphNodeCloneRecord, GraphExecRecord, DeviceRecord, ThreadNameRecord,
                 CategoryNameRecord, DroppedRecord, TrailerRecord, CaptureLaunch>;
template <RecordType type>
using PayloadOf = std::variant_alternative_t<static_cast<std::size_t>(type), RecordValue>;
static_assert(std::variant_size_v<RecordValue> == static_cast<std::size_t>(RecordType::kCaptureLaunch) + 1,
              "one alternative per record type");
static_assert(std::is_same_v<PayloadOf<RecordType::kKernel>, KernelRecord> &&
              std::is_same_v<PayloadOf<RecordType::kWindowStop>, WindowStop> &&
              std::is_same_v<PayloadOf<RecordType::kGraphNode>, GraphNode> &&
              std::is_same_v<PayloadOf<RecordType::kCaptureLaunch>, CaptureLaunch>,
              "alternatives in RecordType order");

// Names of the record types in the same order (opprof_trace_dump's counts).
inline constexpr const char* kRecordTypeNames[] = {
    "unknown",   "string",       "kernel",     "memcpy",       "memset",           "api_call",
    "api_name",  "nvtx_push",    "nvtx_pop",   "nvtx_start",   "nvtx_end",         "nvtx_mark",
    "window_start", "window_stop", "graph_node", "graph_node_clone", "graph_exec", "device",
    "thread_name", "category_name", "dropped", "trailer",      "capture_launch"};
static_assert(std::size(kRecordTypeNames) == std::variant_size_v<RecordValue>);

// Name of a record type, "unknown" for a type this version does not define.
inline const char* record_type_name(std::uint16_t type) {
  return type < std::size(kRecordTypeNames) ? kRecordTypeNames[type] : kRecordTypeNames[0];
}

struct Record {
  std::uint16_t type = 0;   // RecordType's value, or a newer type's (value: UnknownRecord)
  std::size_t offset = 0;   // of the record's RecordHeader in the log
  RecordValue value;
};

class RecordDecoder {
 public:
  // Checks the file header; `log` must outlive the decoder and the records it hands out.
  explicit RecordDecoder(std::string_view log) : log_(log) {
    if (log.size() < sizeof(kMagic) || std::memcmp(log.data(), kMagic, sizeof kMagic) != 0)
      throw FormatError(0, "not an opprof tracer log (bad magic)");
    if (log.size() < sizeof(FileHeader)) throw FormatError(log.size(), "log ends inside its header");
    std::memcpy(&header_, log.data(), sizeof header_);
    if (header_.major > kFormatMajor)
      throw FormatError(8, "log format " + std::to_string(header_.major) + "." + std::to_string(header_.minor) +
                               " is newer than this reader's " + std::to_string(kFormatMajor) + "." +
                               std::to_string(kFormatMinor));
    if (header_.header_bytes < sizeof(FileHeader) || header_.header_bytes > log.size())
      throw FormatError(12, "corrupt header: header size " + std::to_string(header_.header_bytes));
    pos_ = header_.header_bytes;
    // String ids are dense from 1 and each string takes a record of its own: no valid log of this size
    // holds a larger id. The bound keeps an id-indexed string table within a multiple of the file size.
    max_string_id_ = (log.size() - pos_) / record_bytes<StringRecord>();
  }

  const FileHeader& header() const { return header_; }
  std::size_t max_string_id() const { return max_string_id_; }

  // From here on, decodes only the records in [begin, end): boundaries of records that a walk over the
  // record headers found (the reader decodes the parts of a large log on several threads, each with a copy
  // of one decoder). Offsets in errors stay the log's.
  void restrict_to(std::size_t begin, std::size_t end) {
    log_ = log_.substr(0, end);
    pos_ = begin;
  }

  // Decodes the next record into `out`; false at the end of the log or before a record cut short.
  bool next(Record* out) {
    const std::size_t size = log_.size();
    if (pos_ >= size) return false;
    if (size - pos_ < sizeof(RecordHeader)) return cut();
    RecordHeader rh;
    std::memcpy(&rh, log_.data() + pos_, sizeof rh);
    if (rh.size > kMaxPayloadBytes)
      throw FormatError(pos_, "corrupt record: type " + std::to_string(rh.type) + " claims " +
                                  std::to_string(rh.size) + " payload bytes");
    if (size - pos_ - sizeof rh < rh.size) return cut();  // a crash cut the last record
    out->type = rh.type;
    out->offset = pos_;
    decode(rh.type, std::string_view(log_.data() + pos_ + sizeof rh, rh.size), &out->value,
           std::make_index_sequence<std::variant_size_v<RecordValue>>());
    pos_ += sizeof rh + rh.size;
    return true;
  }

  // After next() returned false: whether the log ends inside a record, and at which byte that record starts.
  bool truncated() const { return truncated_; }
  std::size_t truncated_at() const { return pos_; }

 private:
  bool cut() {
    truncated_ = true;
    return false;
  }

  // The fixed part of a payload; a payload shorter than the fixed part this version knows is corrupt, a
  // longer one comes from a newer minor version and its tail is ignored.
  template <typename T>
  T fixed(std::string_view payload) const {
    if (payload.size() < sizeof(T))
      throw FormatError(pos_, "corrupt record: payload of " + std::to_string(payload.size()) +
                                  " bytes, shorter than the " + std::to_string(sizeof(T)) + " bytes of its type");
    T v;
    std::memcpy(&v, payload.data(), sizeof v);
    return v;
  }

  std::vector<StackEntry> stack(std::string_view payload, std::size_t fixed_bytes, std::uint32_t depth,
                                const char* what) const {
    if (depth > kMaxStackDepth || std::size_t{depth} * sizeof(StackEntry) > payload.size() - fixed_bytes)
      throw FormatError(pos_, std::string("corrupt ") + what + " record: stack depth " + std::to_string(depth));
    std::vector<StackEntry> entries(depth);
    if (depth != 0) std::memcpy(entries.data(), payload.data() + fixed_bytes, depth * sizeof(StackEntry));
    return entries;
  }

  // What a payload decodes to as alternative T of RecordValue.
  template <typename T>
  T decode_as(std::string_view payload) const {
    if constexpr (std::is_same_v<T, UnknownRecord>) {
      return {};
    } else if constexpr (std::is_same_v<T, StringEntry>) {
      const auto s = fixed<StringRecord>(payload);
      if (s.length > payload.size() - sizeof s || s.id == 0)
        throw FormatError(pos_, "corrupt string record: id " + std::to_string(s.id) + ", length " +
                                    std::to_string(s.length));
      if (s.id > max_string_id_)
        throw FormatError(pos_, "corrupt string record: id " + std::to_string(s.id) + " beyond the " +
                                    std::to_string(max_string_id_) + " strings a log of " +
                                    std::to_string(log_.size()) + " bytes can hold");
      return StringEntry{s.id, payload.substr(sizeof s, s.length)};
    } else if constexpr (std::is_same_v<T, GraphNode>) {
      const auto g = fixed<GraphNodeRecord>(payload);
      return GraphNode{g, stack(payload, sizeof g, g.depth, "graph node")};
    } else if constexpr (std::is_same_v<T, CaptureLaunch>) {
      const auto c = fixed<CaptureLaunchRecord>(payload);
      return CaptureLaunch{c, stack(payload, sizeof c, c.depth, "capture launch")};
    } else if constexpr (std::is_same_v<T, WindowStart> || std::is_same_v<T, WindowStop>) {
      return T{fixed<WindowRecord>(payload)};
    } else {
      return fixed<T>(payload);
    }
  }

  template <std::size_t... I>
  void decode(std::uint16_t type, std::string_view payload, RecordValue* value, std::index_sequence<I...>) const {
    const bool known = ((I != 0 && type == I &&
                         (value->template emplace<I>(decode_as<std::variant_alternative_t<I, RecordValue>>(payload)),
                          true)) ||
                        ...);
    if (!known) value->template emplace<0>();
  }

  std::string_view log_;
  FileHeader header_{};
  std::size_t pos_ = 0;
  std::size_t max_string_id_ = 0;
  bool truncated_ = false;
};

// Overload set for std::visit over RecordValue: `std::visit(Visitor{[](const KernelRecord&) {...}, ...}, v)`.
template <typename... F>
struct Visitor : F... {
  using F::operator()...;
};
template <typename... F>
Visitor(F...) -> Visitor<F...>;

}  // namespace opprof::tracelog
