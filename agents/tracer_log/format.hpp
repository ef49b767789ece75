#pragma once
// The opprof tracer's binary log format, shared by the writer (agents/tracer, libopprof_tracer.so) and the
// readers (decoder.hpp beside it, used by src/opprof/ingest/tracer_log.cpp and opprof_trace_dump).
// Header-only and dependency-free on purpose: the injection library must not pull opprof_core into the
// traced process.
//
// Layout: one FileHeader, then records. Each record is a RecordHeader {type, size} followed by `size`
// payload bytes. A payload starts with the fixed struct of its type; strings and graph-node stacks append a
// variable tail. Readers skip record types they do not know (size tells them how far), and read only the
// fixed part they know of a payload that a newer minor version made longer. All integers are
// little-endian with fixed widths; the structs below have no implicit padding (static_asserts check it),
// so a record is written and read with one memcpy. Records of different threads interleave in chunks;
// readers sort by timestamp. Within one thread records are in time order, except the push records of
// deferred ranges (kDeferredRangeDomain), which are written at the first launch inside the range.
// docs/tracer.md describes each record.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "contract/opprof_contract.h"

namespace opprof::tracelog {

static_assert(std::endian::native == std::endian::little,
              "the tracer log is little-endian and written with memcpy: port the writer before using it here");

inline constexpr char kMagic[8] = {'O', 'P', 'P', 'R', 'O', 'F', 'T', 'R'};
// A reader refuses a newer major version (the meaning of records changed) and accepts any minor version
// of its major (minor versions only add record types or append fields to payloads).
inline constexpr std::uint16_t kFormatMajor = 1;
inline constexpr std::uint16_t kFormatMinor = 2;  // 1.1: kCaptureLaunch; 1.2: NvtxPushRecord::payload

// NVTX push/pop ranges of this domain (the opprof torch observer's PyTorch operators) are deferred by the
// tracer: a range is written only if a kernel, memcpy or memset is launched inside it, its push record
// then (carrying its start time). Most operators launch nothing, and their ranges would cost the traced
// process a clock read, an interned text and two records each. The domain's producer guarantees that a
// range's text stays valid until the range is popped.
inline constexpr std::string_view kDeferredRangeDomain = OPPROF_NVTX_DOMAIN_TORCH;

// FileHeader::flags
inline constexpr std::uint32_t kFlagWindowOnly = 1u << 0;  // OPPROF_TRACE_WINDOW=1: activity outside windows dropped

struct FileHeader {
  char magic[8];
  std::uint16_t major;
  std::uint16_t minor;
  std::uint32_t header_bytes;  // sizeof(FileHeader) of the writer: records start at this offset
  std::uint32_t pid;
  std::uint32_t flags;
  // The same instant read on three clocks, so CUPTI timestamps (all times in records) can be related to
  // the CPU-side steady clock of Python hooks and to wall time.
  std::uint64_t cupti_start_ns;     // cuptiGetTimestamp()
  std::uint64_t steady_start_ns;    // CLOCK_MONOTONIC (std::chrono::steady_clock on Linux)
  std::uint64_t realtime_start_ns;  // CLOCK_REALTIME
  std::uint64_t reserved[2];
};
static_assert(sizeof(FileHeader) == 64);

struct RecordHeader {
  std::uint16_t type;      // RecordType
  std::uint16_t reserved;  // 0
  std::uint32_t size;      // payload bytes after this header
};
static_assert(sizeof(RecordHeader) == 8);

// Payloads larger than this are treated as corruption by readers; writers never produce them.
inline constexpr std::uint32_t kMaxPayloadBytes = 1u << 20;
// Texts longer than this are cut by the writer (NVTX texts and kernel names are far shorter in practice).
inline constexpr std::uint32_t kMaxStringBytes = 16u * 1024u;
// Graph-node stacks deeper than this keep their outermost entries only.
inline constexpr std::uint32_t kMaxStackDepth = 256;

// The payload of type kX is the struct XRecord, except where a comment names another; decoder.hpp's
// RecordValue lists them in this order. Values are the format's: never renumber.
enum class RecordType : std::uint16_t {
  kString = 1,  // StringRecord + `length` bytes of UTF-8 text
  // GPU activity, the API calls that launched it, and the names of those calls.
  kKernel = 2, kMemcpy = 3, kMemset = 4, kApiCall = 5, kApiName = 6,
  // NVTX ranges and marks, and the capture window (both WindowRecord).
  kNvtxPush = 7, kNvtxPop = 8, kNvtxStart = 9, kNvtxEnd = 10, kNvtxMark = 11, kWindowStart = 12, kWindowStop = 13,
  kGraphNode = 14,  // GraphNodeRecord + depth x StackEntry (outermost first)
  kGraphNodeClone = 15, kGraphExec = 16, kDevice = 17, kThreadName = 18, kCategoryName = 19, kDropped = 20,
  kTrailer = 21,        // written once at a clean exit
  kCaptureLaunch = 22,  // CaptureLaunchRecord + depth x StackEntry (outermost first); since 1.1
};

template <typename T>
inline constexpr bool kIsPayload = std::is_trivially_copyable_v<T> && std::has_unique_object_representations_v<T>;

// The byte offset of a member in T, for the layout checks below (offsetof does not take records made of
// parts): the first byte that turns non-zero when the member alone is set to all ones.
template <typename T, typename Field, typename Owner>
constexpr std::size_t offset_in(Field Owner::*member) {
  T probe{};
  probe.*member = static_cast<Field>(~Field{});
  const auto bytes = std::bit_cast<std::array<unsigned char, sizeof(T)>>(probe);
  std::size_t i = 0;
  while (i < sizeof(T) && bytes[i] == 0) ++i;
  return i;
}

// Parts that several records share. A record names its parts as base classes, then its own fields: the
// parts are laid out first, in the order named, and none has padding, so a record's bytes are its parts'
// bytes one after the other and then its own (the static_asserts after each record check the offsets).

// When a kernel, copy, fill or API call ran (CUPTI timestamps, as every time in records).
struct TimeSpan {
  std::uint64_t start_ns;
  std::uint64_t end_ns;
};
// The CUDA graph node that launched a kernel, copy or fill; 0 when not launched by a graph.
struct GraphNodeRef {
  std::uint64_t graph_node_id;
};
// Bytes a copy or fill moved.
struct TransferBytes {
  std::uint64_t bytes;
};
// Which launch call a kernel, copy or fill came from, and where it ran.
struct ActivityIds {
  std::uint32_t correlation_id;
  std::uint32_t device_id;
  std::uint32_t context_id;
  std::uint32_t stream_id;
  std::uint32_t graph_id;  // 0 when not launched by a graph
};
// An instant on a CPU thread (OS thread id).
struct ThreadInstant {
  std::uint64_t ts_ns;
  std::uint64_t tid;
};
// An NVTX range's text in its domain; also one entry of a graph node's stack (StackEntry).
struct NvtxText {
  std::uint32_t text_sid;
  std::uint32_t domain_sid;  // 0: the default domain
};

// String ids are dense from 1; 0 is "no string" (the default NVTX domain, an unnamed kernel).
struct StringRecord {
  std::uint32_t id;
  std::uint32_t length;  // bytes of text following this struct
};
static_assert(sizeof(StringRecord) == 8);

struct KernelRecord : TimeSpan, GraphNodeRef, ActivityIds {
  std::uint32_t name_sid;  // mangled name
  std::int32_t grid_x, grid_y, grid_z;
  std::int32_t block_x, block_y, block_z;
  std::uint32_t static_shared_bytes;
  std::uint32_t dynamic_shared_bytes;
  std::uint16_t registers_per_thread;
  std::uint8_t launch_type;  // CUpti_ActivityLaunchType
  std::uint8_t reserved0;
  std::uint32_t reserved1;
};
static_assert(sizeof(KernelRecord) == 88 && offset_in<KernelRecord>(&KernelRecord::graph_node_id) == 16 &&
              offset_in<KernelRecord>(&KernelRecord::correlation_id) == 24 &&
              offset_in<KernelRecord>(&KernelRecord::name_sid) == 44);

struct MemcpyRecord : TimeSpan, TransferBytes, GraphNodeRef, ActivityIds {
  std::uint8_t copy_kind;  // CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP, ...
  std::uint8_t src_kind;   // CUpti_ActivityMemoryKind
  std::uint8_t dst_kind;
  std::uint8_t flags;      // CUpti_ActivityFlag (async bit)
};
static_assert(sizeof(MemcpyRecord) == 56 && offset_in<MemcpyRecord>(&MemcpyRecord::bytes) == 16 &&
              offset_in<MemcpyRecord>(&MemcpyRecord::graph_node_id) == 24 &&
              offset_in<MemcpyRecord>(&MemcpyRecord::correlation_id) == 32 &&
              offset_in<MemcpyRecord>(&MemcpyRecord::copy_kind) == 52);

struct MemsetRecord : TimeSpan, TransferBytes, GraphNodeRef, ActivityIds {
  std::uint32_t value;
  std::uint16_t memory_kind;
  std::uint16_t flags;
  std::uint32_t reserved;
};
static_assert(sizeof(MemsetRecord) == 64 && offset_in<MemsetRecord>(&MemsetRecord::bytes) == 16 &&
              offset_in<MemsetRecord>(&MemsetRecord::graph_node_id) == 24 &&
              offset_in<MemsetRecord>(&MemsetRecord::correlation_id) == 32 &&
              offset_in<MemsetRecord>(&MemsetRecord::value) == 52);

inline constexpr std::uint8_t kApiDomainRuntime = 1;
inline constexpr std::uint8_t kApiDomainDriver = 2;

struct ApiCallRecord : TimeSpan {
  std::uint64_t tid;  // OS thread id (gettid)
  std::uint32_t pid;
  std::uint32_t correlation_id;
  std::uint32_t cbid;  // CUPTI callback id within `domain`; ApiNameRecord names it
  std::uint8_t domain; // kApiDomainRuntime / kApiDomainDriver
  std::uint8_t reserved0;
  std::uint16_t reserved1;
};
static_assert(sizeof(ApiCallRecord) == 40 && offset_in<ApiCallRecord>(&ApiCallRecord::tid) == 16);

struct ApiNameRecord {
  std::uint32_t domain;
  std::uint32_t cbid;
  std::uint32_t name_sid;
  std::uint32_t reserved;
};
static_assert(sizeof(ApiNameRecord) == 16);

// NVTX push/pop ranges nest per thread and per domain (the NVTX rule); the reader pairs them that way.
struct NvtxPushRecord : ThreadInstant, NvtxText {
  std::uint32_t category;
  // The range's NVTX payload when it is an unsigned 32-bit one, else 0 (0 in logs before 1.2). The torch
  // observer's operator ranges carry autograd's link there (encode_autograd_link).
  std::uint32_t payload;
};
static_assert(sizeof(NvtxPushRecord) == 32 && offset_in<NvtxPushRecord>(&NvtxPushRecord::text_sid) == 16 &&
              offset_in<NvtxPushRecord>(&NvtxPushRecord::category) == 24);

// The torch observer's payload on an operator range: autograd's sequence number and, on a backward node,
// the RecordFunction thread id of its forward thread, in 32 bits: the id in the low 8 (255 for any above),
// the number in the high 24 as (sequence number mod 2^24 - 1) + 1, 0 meaning none. A forward operator and
// the backward node that differentiates it carry equal numbers; within a capture window two numbers 2^24 - 1
// apart do not occur, so equal encodings are equal numbers.
inline constexpr std::uint32_t kAutogradLinkSeqModulus = (1u << 24) - 1;
constexpr std::uint32_t encode_autograd_link(std::int64_t sequence_nr, std::uint64_t forward_thread) {
  if (sequence_nr < 0) return 0;
  const auto seq = static_cast<std::uint32_t>(static_cast<std::uint64_t>(sequence_nr) % kAutogradLinkSeqModulus) + 1;
  return (seq << 8) | static_cast<std::uint32_t>(forward_thread > 255 ? 255 : forward_thread);
}
// The inverse, up to the modulus: the sequence number's class (-1 for none) and the forward thread id.
constexpr std::int64_t autograd_link_sequence_nr(std::uint32_t payload) {
  return payload == 0 ? -1 : static_cast<std::int64_t>(payload >> 8) - 1;
}
constexpr std::uint64_t autograd_link_forward_thread(std::uint32_t payload) { return payload & 0xffu; }

struct NvtxPopRecord : ThreadInstant {
  std::uint32_t domain_sid;
  std::uint32_t reserved;
};
static_assert(sizeof(NvtxPopRecord) == 24 && offset_in<NvtxPopRecord>(&NvtxPopRecord::domain_sid) == 16);

// Start/end ranges may end on another thread; the id the tracer returned from nvtxRangeStart pairs them.
struct RangeInstant {
  std::uint64_t ts_ns;
  std::uint64_t range_id;
  std::uint64_t tid;
};
struct NvtxStartRecord : RangeInstant, NvtxText {
  std::uint32_t category;
  std::uint32_t reserved;
};
static_assert(sizeof(NvtxStartRecord) == 40 && offset_in<NvtxStartRecord>(&NvtxStartRecord::text_sid) == 24 &&
              offset_in<NvtxStartRecord>(&NvtxStartRecord::category) == 32);

struct NvtxEndRecord : RangeInstant {};
static_assert(sizeof(NvtxEndRecord) == 24);

struct NvtxMarkRecord : ThreadInstant, NvtxText {};
static_assert(sizeof(NvtxMarkRecord) == 24 && offset_in<NvtxMarkRecord>(&NvtxMarkRecord::text_sid) == 16);

// cudaProfilerStart / cudaProfilerStop (or the driver's cuProfilerStart / Stop), seen on API entry.
struct WindowRecord : ThreadInstant {
  std::uint32_t correlation_id;  // of the start/stop call: activity of a window has ids between the two
  std::uint32_t reserved;
};
static_assert(sizeof(WindowRecord) == 24 && offset_in<WindowRecord>(&WindowRecord::correlation_id) == 16);

// One CUDA graph node created (stream capture or explicit cudaGraphAdd*Node) and the NVTX push/pop stack
// open on the creating thread at that moment, outermost first.
struct GraphNodeRecord {
  std::uint64_t node_id;  // cuptiGetGraphNodeId
  std::uint64_t ts_ns;
  std::uint64_t tid;
  std::uint32_t graph_id;   // cuptiGetGraphId
  std::uint32_t node_type;  // CUgraphNodeType
  std::uint32_t depth;      // StackEntry items following this struct
  std::uint32_t reserved;
};
static_assert(sizeof(GraphNodeRecord) == 40);

// One range of the stack a graph node was created or captured under.
using StackEntry = NvtxText;
static_assert(sizeof(StackEntry) == 8);
// A node cloned from another (cudaGraphClone, and instantiation, which clones the graph into the
// executable graph): activity of the clone leads back to the original's capture-time stack.
struct GraphNodeCloneRecord {
  std::uint64_t node_id;
  std::uint64_t original_node_id;
  std::uint32_t graph_id;
  std::uint32_t original_graph_id;
};
static_assert(sizeof(GraphNodeCloneRecord) == 24);

// One launch (kernel, copy, fill) made into a stream that was being captured into a CUDA graph, written at
// the exit of the launch API call, with the NVTX stack open on the launching thread. Independent of the
// resource callbacks: node_id comes from the capture's dependency set right after the launch
// (cuStreamGetCaptureInfo), and when no id route holds, the reader matches a replay's k-th kernel of a name
// to the capture's k-th launch of that name.
struct CaptureLaunchRecord {
  std::uint64_t node_id;     // the node the launch added (cuptiGetGraphNodeId); 0 when it could not be told
  std::uint64_t capture_id;  // cuStreamGetCaptureInfo's id; kSyntheticCaptureBit set when made up per thread
  std::uint64_t ts_ns;
  std::uint64_t tid;
  std::uint32_t correlation_id;
  std::uint32_t graph_id;  // the graph being captured into (cuptiGetGraphId); 0 when unknown
  std::uint32_t name_sid;  // kernel name as the launch callback gives it (mangled); 0 for copies and fills
  std::uint32_t cbid;
  std::uint8_t domain;     // kApiDomainRuntime / kApiDomainDriver
  std::uint8_t reserved0;
  std::uint16_t reserved1;
  std::uint32_t depth;     // StackEntry items following this struct
};
static_assert(sizeof(CaptureLaunchRecord) == 56);
// CaptureLaunchRecord::capture_id of a capture the driver could not be asked about: the tracer numbers
// the BeginCapture..EndCapture spans of each thread itself.
inline constexpr std::uint64_t kSyntheticCaptureBit = 1ull << 63;

struct GraphExecRecord {
  std::uint32_t exec_id;   // cuptiGetGraphExecId
  std::uint32_t graph_id;  // the graph it was instantiated from
};
static_assert(sizeof(GraphExecRecord) == 8);

struct DeviceRecord {
  std::uint64_t global_memory_bytes;
  std::uint32_t device_id;
  std::uint32_t name_sid;
  std::uint32_t cc_major;
  std::uint32_t cc_minor;
  std::uint32_t sm_count;
  std::uint32_t reserved;
};
static_assert(sizeof(DeviceRecord) == 32);

struct ThreadNameRecord {
  std::uint64_t tid;
  std::uint32_t name_sid;
  std::uint32_t reserved;
};
static_assert(sizeof(ThreadNameRecord) == 16);

struct CategoryNameRecord {
  std::uint32_t domain_sid;
  std::uint32_t category;
  std::uint32_t name_sid;
  std::uint32_t reserved;
};
static_assert(sizeof(CategoryNameRecord) == 16);

// Activity the tracer could not keep: CUPTI's dropped-record count for a buffer, and buffer requests the
// fixed pool could not serve (CUPTI then drops records itself and counts them).
struct DroppedRecord {
  std::uint64_t cupti_dropped_records;
  std::uint64_t pool_exhausted_requests;
};
static_assert(sizeof(DroppedRecord) == 16);

struct TrailerRecord {
  std::uint64_t cupti_end_ns;
  std::uint64_t steady_end_ns;
  std::uint64_t records_written;    // records before this one, all threads
  std::uint64_t strings_written;
};
static_assert(sizeof(TrailerRecord) == 32);

// Writes one record (header, fixed part, optional tail) at `out`, which must have record_bytes() free;
// returns the position after it. The caller guarantees sizes below kMaxPayloadBytes.
template <typename T>
inline char* put_record(char* out, RecordType type, const T& fixed, const void* tail = nullptr,
                        std::size_t tail_bytes = 0) {
  static_assert(kIsPayload<T>, "record payloads are padding-free trivially copyable structs");
  RecordHeader h{static_cast<std::uint16_t>(type), 0, static_cast<std::uint32_t>(sizeof(T) + tail_bytes)};
  std::memcpy(out, &h, sizeof h);
  std::memcpy(out + sizeof h, &fixed, sizeof(T));
  if (tail_bytes != 0) std::memcpy(out + sizeof h + sizeof(T), tail, tail_bytes);
  return out + sizeof h + sizeof(T) + tail_bytes;
}

template <typename T>
constexpr std::size_t record_bytes(std::size_t tail_bytes = 0) {
  return sizeof(RecordHeader) + sizeof(T) + tail_bytes;
}

// Builds a log in memory: what tests and tools use to write logs without the CUDA injection library.
class LogBuilder {
 public:
  explicit LogBuilder(std::uint32_t pid = 1, std::uint32_t flags = 0, std::uint64_t cupti_start_ns = 0,
                      std::uint64_t steady_start_ns = 0) {
    FileHeader h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.major = kFormatMajor;
    h.minor = kFormatMinor;
    h.header_bytes = sizeof(FileHeader);
    h.pid = pid;
    h.flags = flags;
    h.cupti_start_ns = cupti_start_ns;
    h.steady_start_ns = steady_start_ns;
    bytes_.append(reinterpret_cast<const char*>(&h), sizeof h);
  }
  template <typename T>
  LogBuilder& add(RecordType type, const T& fixed, const void* tail = nullptr, std::size_t tail_bytes = 0) {
    const std::size_t at = bytes_.size();
    bytes_.resize(at + record_bytes<T>(tail_bytes));
    put_record(bytes_.data() + at, type, fixed, tail, tail_bytes);
    return *this;
  }
  LogBuilder& string(std::uint32_t id, std::string_view text) {
    StringRecord s{id, static_cast<std::uint32_t>(text.size())};
    return add(RecordType::kString, s, text.data(), text.size());
  }
  // A record of a type this version does not define, to test that readers skip it.
  LogBuilder& raw(std::uint16_t type, std::string_view payload) {
    RecordHeader h{type, 0, static_cast<std::uint32_t>(payload.size())};
    bytes_.append(reinterpret_cast<const char*>(&h), sizeof h);
    bytes_.append(payload);
    return *this;
  }
  const std::string& bytes() const { return bytes_; }
  std::string& mutable_bytes() { return bytes_; }

 private:
  std::string bytes_;
};

}  // namespace opprof::tracelog
