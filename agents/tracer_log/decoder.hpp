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
#include <stdexcept>
#include <string>
#include <string_view>
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
// A record type a newer minor version added: skipped by its size.
struct UnknownRecord {};

using RecordValue =
    std::variant<UnknownRecord, StringEntry, KernelRecord, MemcpyRecord, MemsetRecord, ApiCallRecord, ApiNameRecord,
                 NvtxPushRecord, NvtxPopRecord, NvtxStartRecord, NvtxEndRecord, NvtxMarkRecord, WindowRecord,
                 GraphNode, GraphNodeCloneRecord, GraphExecRecord, DeviceRecord, ThreadNameRecord,
                 CategoryNameRecord, DroppedRecord, TrailerRecord, CaptureLaunch>;

struct Record {
  std::uint16_t type = 0;   // RecordType's value (kWindowStart and kWindowStop share WindowRecord)
  std::size_t offset = 0;   // of the record's RecordHeader in the log
  RecordValue value;
};

// Name of a record type, "unknown" for a type this version does not define.
inline const char* record_type_name(std::uint16_t type) {
  switch (static_cast<RecordType>(type)) {
    case RecordType::kString: return "string";
    case RecordType::kKernel: return "kernel";
    case RecordType::kMemcpy: return "memcpy";
    case RecordType::kMemset: return "memset";
    case RecordType::kApiCall: return "api_call";
    case RecordType::kApiName: return "api_name";
    case RecordType::kNvtxPush: return "nvtx_push";
    case RecordType::kNvtxPop: return "nvtx_pop";
    case RecordType::kNvtxStart: return "nvtx_start";
    case RecordType::kNvtxEnd: return "nvtx_end";
    case RecordType::kNvtxMark: return "nvtx_mark";
    case RecordType::kWindowStart: return "window_start";
    case RecordType::kWindowStop: return "window_stop";
    case RecordType::kGraphNode: return "graph_node";
    case RecordType::kGraphNodeClone: return "graph_node_clone";
    case RecordType::kGraphExec: return "graph_exec";
    case RecordType::kDevice: return "device";
    case RecordType::kThreadName: return "thread_name";
    case RecordType::kCategoryName: return "category_name";
    case RecordType::kDropped: return "dropped";
    case RecordType::kTrailer: return "trailer";
    case RecordType::kCaptureLaunch: return "capture_launch";
  }
  return "unknown";
}

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
    decode(rh.type, std::string_view(log_.data() + pos_ + sizeof rh, rh.size), &out->value);
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

  void decode(std::uint16_t type, std::string_view payload, RecordValue* value) const {
    switch (static_cast<RecordType>(type)) {
      case RecordType::kString: {
        const auto s = fixed<StringRecord>(payload);
        if (s.length > payload.size() - sizeof s || s.id == 0)
          throw FormatError(pos_, "corrupt string record: id " + std::to_string(s.id) + ", length " +
                                      std::to_string(s.length));
        if (s.id > max_string_id_)
          throw FormatError(pos_, "corrupt string record: id " + std::to_string(s.id) + " beyond the " +
                                      std::to_string(max_string_id_) + " strings a log of " +
                                      std::to_string(log_.size()) + " bytes can hold");
        *value = StringEntry{s.id, payload.substr(sizeof s, s.length)};
        return;
      }
      case RecordType::kKernel: *value = fixed<KernelRecord>(payload); return;
      case RecordType::kMemcpy: *value = fixed<MemcpyRecord>(payload); return;
      case RecordType::kMemset: *value = fixed<MemsetRecord>(payload); return;
      case RecordType::kApiCall: *value = fixed<ApiCallRecord>(payload); return;
      case RecordType::kApiName: *value = fixed<ApiNameRecord>(payload); return;
      case RecordType::kNvtxPush: *value = fixed<NvtxPushRecord>(payload); return;
      case RecordType::kNvtxPop: *value = fixed<NvtxPopRecord>(payload); return;
      case RecordType::kNvtxStart: *value = fixed<NvtxStartRecord>(payload); return;
      case RecordType::kNvtxEnd: *value = fixed<NvtxEndRecord>(payload); return;
      case RecordType::kNvtxMark: *value = fixed<NvtxMarkRecord>(payload); return;
      case RecordType::kWindowStart:
      case RecordType::kWindowStop: *value = fixed<WindowRecord>(payload); return;
      case RecordType::kGraphNode: {
        const auto g = fixed<GraphNodeRecord>(payload);
        *value = GraphNode{g, stack(payload, sizeof g, g.depth, "graph node")};
        return;
      }
      case RecordType::kGraphNodeClone: *value = fixed<GraphNodeCloneRecord>(payload); return;
      case RecordType::kGraphExec: *value = fixed<GraphExecRecord>(payload); return;
      case RecordType::kDevice: *value = fixed<DeviceRecord>(payload); return;
      case RecordType::kThreadName: *value = fixed<ThreadNameRecord>(payload); return;
      case RecordType::kCategoryName: *value = fixed<CategoryNameRecord>(payload); return;
      case RecordType::kDropped: *value = fixed<DroppedRecord>(payload); return;
      case RecordType::kTrailer: *value = fixed<TrailerRecord>(payload); return;
      case RecordType::kCaptureLaunch: {
        const auto c = fixed<CaptureLaunchRecord>(payload);
        *value = CaptureLaunch{c, stack(payload, sizeof c, c.depth, "capture launch")};
        return;
      }
    }
    *value = UnknownRecord{};
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
