// libopprof_tracer.so: records a CUDA program's GPU activity and NVTX ranges into an opprof tracer log,
// with no Nsight Systems and no second profiler in the process.
//
// Loaded twice through one file:
//  - CUDA_INJECTION64_PATH: the driver calls InitializeInjection() during cuInit. We enable CUPTI activity
//    records (kernels, memcpy, memset, devices) streamed through a fixed pool of buffers to the log, and
//    subscribe to CUPTI callbacks for the capture window (cudaProfilerStart/Stop), CUDA-graph capture and
//    node creation/cloning, and the launch-like runtime/driver calls, whose API records we write ourselves.
//  - NVTX_INJECTION64_PATH: every NVTX instance in the process (the application's, libtorch's, ...; NVTX v3
//    is header-only so each library carries its own) calls InitializeInjectionNvtx2() on its first NVTX call.
//    We fill that instance's core and core2 callback tables with our handlers. CUPTI's own NVTX marker
//    records are not used: they did not arrive on the H200 machine and would need CUPTI as the NVTX injection.
//
// Hot path (NVTX push/pop): a thread-local stack and a thread-local byte buffer, no locks, no formatting.
// Operator ranges of the torch observer (kDeferredRangeDomain) are written only at the first launch inside
// them; window-only mode switches GPU activity recording with the window.
// A thread's buffer is written to the file in one write() when full (under a mutex, once per 64 KiB),
// when the thread exits, and at process exit.
// cupti.h brings the launch callbacks' parameter structs (generated_cuda_*_meta.h) too.
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCuda.h>

#include <dlfcn.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "contract/opprof_contract.h"
#include "tracer_log/format.hpp"

namespace {

using namespace opprof::tracelog;

// ------------------------------------------------------------------------------------------------
// Clocks and small helpers

std::uint64_t cupti_now() {
  std::uint64_t ts = 0;
  cuptiGetTimestamp(&ts);
  return ts;
}

std::uint64_t clock_ns(clockid_t id) {
  timespec t{};
  clock_gettime(id, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(t.tv_nsec);
}

std::uint64_t os_tid() { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

// Messages to stderr without stdio buffering, usable from any context.
void note(const char* msg) {
  const char prefix[] = "[opprof-tracer] ";
  ssize_t ignored = write(2, prefix, sizeof prefix - 1);
  ignored = write(2, msg, std::strlen(msg));
  ignored = write(2, "\n", 1);
  (void)ignored;
}

// Unset or empty: `fallback`; "0": false; anything else: true.
bool env_flag(const char* name, bool fallback = false) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] == '\0') return fallback;
  return std::strcmp(v, "0") != 0;
}

std::size_t env_size(const char* name, std::size_t fallback, std::size_t lo, std::size_t hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0' || n < lo || n > hi) return fallback;
  return static_cast<std::size_t>(n);
}

// ------------------------------------------------------------------------------------------------
// The output file

struct Output {
  int fd = -1;
  std::mutex write_mu;  // serializes whole chunks; never taken per record
  bool window_only = false;
  std::atomic<std::uint32_t> next_string_id{1};
  std::atomic<bool> finished{false};
  bool defer_operators = true;  // OPPROF_TRACE_DEFER_OPERATORS=0 writes every kDeferredRangeDomain range
  bool switch_at_windows = true;  // OPPROF_TRACE_WINDOW_SWITCH=0 keeps GPU activity on outside windows too
};
Output g_out;
std::once_flag g_open_once;
void at_exit();

void write_chunk(const char* data, std::size_t n) {
  if (g_out.fd < 0 || n == 0) return;
  std::lock_guard<std::mutex> lock(g_out.write_mu);
  while (n > 0) {
    ssize_t w = write(g_out.fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      note("write to the trace file failed; later records are lost");
      return;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

// A job's processes (torchrun's ranks, a launcher's children) inherit one OPPROF_TRACE_FILE: each writes
// into a folder of its own beside it, rank<R>/ from RANK (else LOCAL_RANK) as the launcher set it in this
// process's environment, else pid<P>/. The engine reads every such folder as one process of the job.
std::string per_process_path(const std::string& path) {
  const char* rank = std::getenv("RANK");
  if (rank == nullptr || *rank == '\0') rank = std::getenv("LOCAL_RANK");
  std::string folder = rank != nullptr && *rank != '\0' && std::strspn(rank, "0123456789") == std::strlen(rank)
                           ? std::string(OPPROF_RANK_DIR_PREFIX) + rank
                           : std::string(OPPROF_PROCESS_DIR_PREFIX) + std::to_string(getpid());
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  folder = dir + folder;
  if (mkdir(folder.c_str(), 0755) != 0 && errno != EEXIST) {
    std::string msg = "cannot create " + folder + ": " + std::strerror(errno) + "; writing " + path;
    note(msg.c_str());
    return path;
  }
  return folder + "/" + (slash == std::string::npos ? path : path.substr(slash + 1));
}

void open_output() {
  std::call_once(g_open_once, [] {
    g_out.window_only = env_flag(OPPROF_ENV_TRACE_WINDOW);
    g_out.defer_operators = env_flag(OPPROF_ENV_TRACE_DEFER_OPERATORS, true);
    g_out.switch_at_windows = env_flag(OPPROF_ENV_TRACE_WINDOW_SWITCH, true);
    std::string path;
    if (const char* p = std::getenv(OPPROF_ENV_TRACE_FILE); p != nullptr && *p != '\0') {
      path = p;
    } else {
      path = "opprof-trace-" + std::to_string(getpid()) + ".bin";
    }
    if (env_flag(OPPROF_ENV_TRACE_PER_PROCESS)) path = per_process_path(path);
    // Child processes inherit the injection variables (Inductor's compile workers, DataLoader workers
    // started by exec): a child that initializes CUDA must not truncate the log its live parent is
    // writing. It writes beside it, to <path>.<pid>.
    if (int existing = open(path.c_str(), O_RDONLY | O_CLOEXEC); existing >= 0) {
      FileHeader other{};
      const bool whole = read(existing, &other, sizeof other) == static_cast<ssize_t>(sizeof other);
      close(existing);
      if (whole && std::memcmp(other.magic, kMagic, sizeof kMagic) == 0 && other.pid != static_cast<std::uint32_t>(getpid()) &&
          other.pid != 0 && kill(static_cast<pid_t>(other.pid), 0) == 0) {
        path += "." + std::to_string(getpid());
        std::string msg = "the trace file belongs to running process " + std::to_string(other.pid) + "; this process writes " + path;
        note(msg.c_str());
      }
    }
    g_out.fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (g_out.fd < 0) {
      std::string msg = "cannot open trace file " + path + ": " + std::strerror(errno);
      note(msg.c_str());
      return;
    }
    FileHeader h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.major = kFormatMajor;
    h.minor = kFormatMinor;
    h.header_bytes = sizeof(FileHeader);
    h.pid = static_cast<std::uint32_t>(getpid());
    h.flags = g_out.window_only ? kFlagWindowOnly : 0u;
    h.cupti_start_ns = cupti_now();
    h.steady_start_ns = clock_ns(CLOCK_MONOTONIC);
    h.realtime_start_ns = clock_ns(CLOCK_REALTIME);
    write_chunk(reinterpret_cast<const char*>(&h), sizeof h);
    // Registered by whichever injection comes first, so an NVTX-only process is flushed too.
    std::atexit(at_exit);
  });
}

// ------------------------------------------------------------------------------------------------
// Per-thread state: record buffer, NVTX stack, string cache

constexpr std::size_t kThreadBufferBytes = 64 * 1024;
static_assert(kThreadBufferBytes > record_bytes<StringRecord>(kMaxStringBytes) +
                                       record_bytes<GraphNodeRecord>(kMaxStackDepth * sizeof(StackEntry)));

// A direct-mapped cache of recently interned texts: repeated texts (module names, kernel names) are
// written once per eviction, unique ones (emit_nvtx texts carry an op id) cost one string record each.
// Bounded: no allocation after the thread's first use.
struct StringCache {
  static constexpr std::size_t kSlots = 1024;
  static constexpr std::size_t kMaxCached = 116;
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t id = 0;
    std::uint16_t length = 0;
    char text[kMaxCached];
  };
  Slot slots[kSlots];
};

struct StackItem {
  const char* pending_text;  // a deferred range's text, not interned yet (null once it is)
  std::uint64_t start_ns;
  std::uint32_t text_sid;
  std::uint32_t domain_sid;
  std::uint32_t category;
  std::uint32_t payload;  // NvtxPushRecord::payload
  int level;     // 0-based nesting level within its domain (what NVTX's push and pop return)
  bool written;  // the push record was written
};

struct ThreadLog {
  std::atomic<bool> busy{false};    // the owner is appending; the exit flusher waits for it
  std::atomic<bool> in_use{false};  // owned by a live thread
  ThreadLog* next = nullptr;        // registry of every ThreadLog ever made
  std::uint64_t tid = 0;
  std::uint32_t used = 0;
  // Records appended by this thread; a plain increment by the owner (no locked add per record), read at exit.
  std::atomic<std::uint64_t> records{0};
  std::vector<StackItem> stack;
  std::uint32_t unwritten = 0;  // items of `stack` whose push record is not written yet
  StringCache cache;
  std::string utf8;  // scratch for wide-character NVTX texts
  alignas(64) char data[kThreadBufferBytes];
};

std::atomic<ThreadLog*> g_thread_logs{nullptr};

void flush_buffer(ThreadLog& t) {
  write_chunk(t.data, t.used);
  t.used = 0;
}

ThreadLog* acquire_thread_log() {
  // Reuse a log a finished thread gave back, so thread churn keeps memory bounded.
  for (ThreadLog* t = g_thread_logs.load(std::memory_order_acquire); t != nullptr; t = t->next) {
    bool expected = false;
    if (t->in_use.compare_exchange_strong(expected, true)) return t;
  }
  auto* t = new ThreadLog();
  t->in_use.store(true);
  t->stack.reserve(64);
  t->utf8.reserve(256);
  ThreadLog* head = g_thread_logs.load(std::memory_order_relaxed);
  do {
    t->next = head;
  } while (!g_thread_logs.compare_exchange_weak(head, t, std::memory_order_release, std::memory_order_relaxed));
  return t;
}

// The calling thread's log. A trivial thread_local, readable even after the thread's destructors ran
// (exit() runs the main thread's thread_local destructors before atexit handlers, and CUPTI may still call
// back on that thread while we flush).
thread_local ThreadLog* t_log = nullptr;
thread_local bool t_released = false;

// Flushes the thread's log and gives it back for reuse when the thread exits.
struct ThreadLogRelease {
  bool armed = false;
  ~ThreadLogRelease() {
    ThreadLog* log = t_log;
    t_released = true;
    if (log == nullptr) return;
    while (log->busy.exchange(true, std::memory_order_acquire)) {
    }
    flush_buffer(*log);
    log->stack.clear();
    log->unwritten = 0;
    log->busy.store(false, std::memory_order_release);
    t_log = nullptr;
    log->in_use.store(false, std::memory_order_release);
  }
};
thread_local ThreadLogRelease t_release;

ThreadLog& this_thread_log() {
  ThreadLog* t = t_log;
  if (t == nullptr) [[unlikely]] {
    open_output();
    t = acquire_thread_log();
    t->tid = os_tid();
    t->used = 0;
    t_log = t;
    // After the release ran, a late log stays owned (flushed at exit by flush_all_thread_logs).
    if (!t_released) t_release.armed = true;
  }
  return *t;
}

// Marks the owner's append in progress; the exit flusher spins on it instead of a mutex.
struct Appending {
  ThreadLog& t;
  explicit Appending(ThreadLog& log) : t(log) {
    // Uncontended except while the exit flusher drains this buffer.
    while (t.busy.exchange(true, std::memory_order_acquire)) {
    }
  }
  ~Appending() { t.busy.store(false, std::memory_order_release); }
};

char* reserve(ThreadLog& t, std::size_t n) {
  if (t.used + n > kThreadBufferBytes) flush_buffer(t);
  return t.data + t.used;
}

template <typename T>
void append(ThreadLog& t, RecordType type, const T& fixed, const void* tail = nullptr, std::size_t tail_bytes = 0) {
  char* out = reserve(t, record_bytes<T>(tail_bytes));
  char* end = put_record(out, type, fixed, tail, tail_bytes);
  t.used += static_cast<std::uint32_t>(end - out);
  t.records.store(t.records.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

std::uint64_t fnv1a(const char* s, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 1099511628211ull;
  return h;
}

std::uint32_t write_string(ThreadLog& t, const char* s, std::size_t n) {
  const std::uint32_t id = g_out.next_string_id.fetch_add(1, std::memory_order_relaxed);
  StringRecord r{id, static_cast<std::uint32_t>(n)};
  append(t, RecordType::kString, r, s, n);
  return id;
}

// Interns a text into the log: returns its string id, writing a string record on a cache miss.
std::uint32_t intern(ThreadLog& t, const char* s, std::size_t n) {
  if (s == nullptr) return 0;
  if (n > kMaxStringBytes) n = kMaxStringBytes;
  if (n > StringCache::kMaxCached) return write_string(t, s, n);
  const std::uint64_t h = fnv1a(s, n);
  StringCache::Slot& slot = t.cache.slots[h & (StringCache::kSlots - 1)];
  if (slot.id != 0 && slot.hash == h && slot.length == n && std::memcmp(slot.text, s, n) == 0) return slot.id;
  const std::uint32_t id = write_string(t, s, n);
  slot.hash = h;
  slot.id = id;
  slot.length = static_cast<std::uint16_t>(n);
  std::memcpy(slot.text, s, n);
  return id;
}

std::uint32_t intern(ThreadLog& t, const char* s) { return s == nullptr ? 0 : intern(t, s, std::strlen(s)); }

// NVTX's W entry points take wchar_t (UTF-32 on Linux); the log holds UTF-8.
std::uint32_t intern_wide(ThreadLog& t, const wchar_t* w) {
  if (w == nullptr) return 0;
  std::string& out = t.utf8;
  out.clear();
  for (; *w != 0 && out.size() < kMaxStringBytes; ++w) {
    auto c = static_cast<std::uint32_t>(*w);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | ((c >> 18) & 0x07)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return intern(t, out.data(), out.size());
}

// Flushes every thread's buffer: at exit and on a fatal signal, from one thread while others may run.
void flush_all_thread_logs() {
  for (ThreadLog* t = g_thread_logs.load(std::memory_order_acquire); t != nullptr; t = t->next) {
    // Bounded wait: a thread stopped inside an append for good (it cannot be at exit) must not hang us.
    bool acquired = false;
    for (int spin = 0; spin < 200000; ++spin) {
      if (!t->busy.exchange(true, std::memory_order_acquire)) {
        acquired = true;
        break;
      }
      if (spin > 1000) sched_yield();
    }
    if (!acquired) continue;
    flush_buffer(*t);
    t->busy.store(false, std::memory_order_release);
  }
}

// ------------------------------------------------------------------------------------------------
// Capture window (cudaProfilerStart / Stop)

struct Window {
  std::uint32_t start_correlation;
  std::uint32_t stop_correlation;  // UINT32_MAX while open
};
constexpr std::size_t kMaxWindows = 256;
std::mutex g_window_mu;
Window g_windows[kMaxWindows];
std::size_t g_window_count = 0;
std::atomic<bool> g_window_open{false};

// Window-only mode: NVTX records are written only while a window is open (cheap relaxed load).
bool nvtx_recording() { return !g_out.window_only || g_window_open.load(std::memory_order_relaxed); }

struct WindowSnapshot {
  Window windows[kMaxWindows];
  std::size_t count = 0;
  bool contains(std::uint32_t correlation) const {
    for (std::size_t i = 0; i < count; ++i)
      if (correlation > windows[i].start_correlation && correlation < windows[i].stop_correlation) return true;
    return false;
  }
};

void sync_recording();

void window_event(bool start, std::uint32_t correlation) {
  ThreadLog& t = this_thread_log();
  {
    std::lock_guard<std::mutex> lock(g_window_mu);
    const bool open = g_window_open.load();
    // cudaProfilerStart calls cuProfilerStart: both callbacks fire; the outer one wins.
    if (start == open) return;
    if (start) {
      if (g_window_count == kMaxWindows) return;
      g_windows[g_window_count++] = Window{correlation, UINT32_MAX};
    } else if (g_window_count > 0) {
      g_windows[g_window_count - 1].stop_correlation = correlation;
    }
    g_window_open.store(start);
  }
  sync_recording();
  Appending a(t);
  WindowRecord r{cupti_now(), t.tid, correlation, 0};
  append(t, start ? RecordType::kWindowStart : RecordType::kWindowStop, r);
}

// ------------------------------------------------------------------------------------------------
// NVTX handlers

struct Domain {
  std::uint32_t name_sid;
  bool deferred;  // kDeferredRangeDomain: push/pop ranges are written only if a launch happens inside
};
struct RegisteredString {
  std::uint32_t sid;
};

std::uint32_t domain_sid(nvtxDomainHandle_t d) {
  return d == nullptr ? 0u : reinterpret_cast<const Domain*>(d)->name_sid;
}

std::uint32_t message_sid(ThreadLog& t, const nvtxEventAttributes_t* a) {
  if (a == nullptr) return 0;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return intern(t, a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return intern_wide(t, a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered == nullptr
                 ? 0u
                 : reinterpret_cast<const RegisteredString*>(a->message.registered)->sid;
    default: return 0;
  }
}

std::uint32_t category_of(const nvtxEventAttributes_t* a) { return a == nullptr ? 0u : a->category; }
std::uint32_t payload_of(const nvtxEventAttributes_t* a) {
  return a != nullptr && a->payloadType == NVTX_PAYLOAD_TYPE_UNSIGNED_INT32 ? a->payload.uiValue : 0u;
}

// The level a new range of `dom` gets: one below the innermost open range of the domain, found from the top
// of the stack (usually the top item itself: operators nest in operators).
int next_level(const ThreadLog& t, std::uint32_t dom) {
  for (auto it = t.stack.rbegin(); it != t.stack.rend(); ++it)
    if (it->domain_sid == dom) return it->level + 1;
  return 0;
}

// The text id is computed by the caller so the three push flavours share this body.
template <typename TextFn>
int push_range(std::uint32_t dom, std::uint32_t category, std::uint32_t payload, TextFn text) {
  ThreadLog& t = this_thread_log();
  Appending a(t);
  // Interned even outside the window: a graph node captured under this range names it by this id.
  const std::uint32_t sid = text(t);
  const std::uint64_t start = cupti_now();
  const bool write = nvtx_recording();
  if (write) {
    NvtxPushRecord r{start, t.tid, sid, dom, category, payload};
    append(t, RecordType::kNvtxPush, r);
  } else {
    ++t.unwritten;  // written if a launch happens inside it once a window is open
  }
  const int level = next_level(t, dom);
  t.stack.push_back(StackItem{nullptr, start, sid, dom, category, payload, level, write});
  return level;
}

// A range of the deferred domain (PyTorch operators from the opprof torch observer, most of which launch
// nothing): only its start time and text pointer are kept; materialize() writes it if a launch happens
// inside it, and its pop is dropped otherwise. The domain's contract is that the text stays valid until
// the range is popped (the observer passes the RecordFunction's own name).
// No Appending: the stack is the owner's alone, and nothing is appended to the buffer the exit flusher reads.
int push_deferred(std::uint32_t dom, std::uint32_t category, std::uint32_t payload, const char* text) {
  ThreadLog& t = this_thread_log();
  const int level = next_level(t, dom);
  t.stack.push_back(StackItem{text, cupti_now(), 0, dom, category, payload, level, false});
  ++t.unwritten;
  return level;
}

// Interns the pending texts of the thread's open ranges and, when `write`, writes the push records not
// written yet (with their own start times: within a thread the reader orders records by time). Called
// with the thread's log held (Appending).
void materialize(ThreadLog& t, bool write) {
  for (StackItem& s : t.stack) {
    if (s.pending_text != nullptr) {
      s.text_sid = intern(t, s.pending_text);
      s.pending_text = nullptr;
    }
    if (write && !s.written) {
      NvtxPushRecord r{s.start_ns, t.tid, s.text_sid, s.domain_sid, s.category, s.payload};
      append(t, RecordType::kNvtxPush, r);
      s.written = true;
      --t.unwritten;
    }
  }
}

int pop_range(std::uint32_t dom) {
  ThreadLog& t = this_thread_log();
  // NVTX nests per domain: pop the innermost range of this domain.
  for (std::size_t i = t.stack.size(); i-- > 0;) {
    if (t.stack[i].domain_sid != dom) continue;
    const bool written = t.stack[i].written;
    const int level = t.stack[i].level;
    t.stack.erase(t.stack.begin() + static_cast<std::ptrdiff_t>(i));
    if (written) {
      Appending a(t);  // only appends need it: the stack is the owner's alone
      NvtxPopRecord r{cupti_now(), t.tid, dom, 0};
      append(t, RecordType::kNvtxPop, r);
    } else {
      --t.unwritten;
    }
    return level;
  }
  return -1;  // NVTX's "no range open" answer
}

// The thread's open ranges as graph-node stack entries (at most kMaxStackDepth, outermost first).
std::uint32_t stack_entries(ThreadLog& t, StackEntry (&entries)[kMaxStackDepth]) {
  materialize(t, false);
  std::uint32_t depth = 0;
  for (const StackItem& s : t.stack) {
    if (depth == kMaxStackDepth) break;
    entries[depth++] = StackEntry{s.text_sid, s.domain_sid};
  }
  return depth;
}

// Range ids: a process-wide counter; the top bit says the start record was written (window mode).
std::atomic<std::uint64_t> g_next_range_id{1};
constexpr std::uint64_t kRangeWritten = 1ull << 63;

template <typename TextFn>
nvtxRangeId_t start_range(std::uint32_t dom, std::uint32_t category, TextFn text) {
  ThreadLog& t = this_thread_log();
  Appending a(t);
  const std::uint32_t sid = text(t);
  std::uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (nvtx_recording()) {
    NvtxStartRecord r{cupti_now(), id, t.tid, sid, dom, category, 0};
    append(t, RecordType::kNvtxStart, r);
    id |= kRangeWritten;
  }
  return id;
}

void end_range(nvtxRangeId_t id) {
  if ((id & kRangeWritten) == 0) return;
  ThreadLog& t = this_thread_log();
  Appending a(t);
  NvtxEndRecord r{cupti_now(), id & ~kRangeWritten, t.tid};
  append(t, RecordType::kNvtxEnd, r);
}

// A mark in the deferred domain (the observer's communication marks, OPPROF_COMM_ARGS_MARK) describes the
// range around it: the deferred ranges open on the thread are written first, as a launch would.
template <typename TextFn>
void mark(std::uint32_t dom, TextFn text, bool deferred_domain = false) {
  if (!nvtx_recording()) return;
  ThreadLog& t = this_thread_log();
  Appending a(t);
  if (deferred_domain) materialize(t, true);
  NvtxMarkRecord r{cupti_now(), t.tid, text(t), dom};
  append(t, RecordType::kNvtxMark, r);
}

void name_category(std::uint32_t dom, uint32_t category, std::uint32_t (*text)(ThreadLog&, const void*),
                   const void* name) {
  ThreadLog& t = this_thread_log();
  Appending a(t);
  CategoryNameRecord r{dom, category, text(t, name), 0};
  append(t, RecordType::kCategoryName, r);
}

std::uint32_t ascii_text(ThreadLog& t, const void* s) { return intern(t, static_cast<const char*>(s)); }
std::uint32_t wide_text(ThreadLog& t, const void* s) { return intern_wide(t, static_cast<const wchar_t*>(s)); }

void name_thread(uint32_t os_thread, std::uint32_t (*text)(ThreadLog&, const void*), const void* name) {
  ThreadLog& t = this_thread_log();
  Appending a(t);
  ThreadNameRecord r{os_thread, text(t, name), 0};
  append(t, RecordType::kThreadName, r);
}

// Core module (NVTX v1 API, default domain)
void NVTX_API MarkEx(const nvtxEventAttributes_t* a) { mark(0, [a](ThreadLog& t) { return message_sid(t, a); }); }
void NVTX_API MarkA(const char* m) { mark(0, [m](ThreadLog& t) { return intern(t, m); }); }
void NVTX_API MarkW(const wchar_t* m) { mark(0, [m](ThreadLog& t) { return intern_wide(t, m); }); }
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) {
  return start_range(0, category_of(a), [a](ThreadLog& t) { return message_sid(t, a); });
}
nvtxRangeId_t NVTX_API RangeStartA(const char* m) {
  return start_range(0, 0, [m](ThreadLog& t) { return intern(t, m); });
}
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* m) {
  return start_range(0, 0, [m](ThreadLog& t) { return intern_wide(t, m); });
}
void NVTX_API RangeEnd(nvtxRangeId_t id) { end_range(id); }
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) {
  return push_range(0, category_of(a), payload_of(a), [a](ThreadLog& t) { return message_sid(t, a); });
}
int NVTX_API RangePushA(const char* m) { return push_range(0, 0, 0, [m](ThreadLog& t) { return intern(t, m); }); }
int NVTX_API RangePushW(const wchar_t* m) {
  return push_range(0, 0, 0, [m](ThreadLog& t) { return intern_wide(t, m); });
}
int NVTX_API RangePop() { return pop_range(0); }
void NVTX_API NameCategoryA(uint32_t c, const char* n) { name_category(0, c, ascii_text, n); }
void NVTX_API NameCategoryW(uint32_t c, const wchar_t* n) { name_category(0, c, wide_text, n); }
void NVTX_API NameOsThreadA(uint32_t tid, const char* n) { name_thread(tid, ascii_text, n); }
void NVTX_API NameOsThreadW(uint32_t tid, const wchar_t* n) { name_thread(tid, wide_text, n); }

// Core2 module (domains)
void NVTX_API DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  mark(domain_sid(d), [a](ThreadLog& t) { return message_sid(t, a); },
       d != nullptr && reinterpret_cast<const Domain*>(d)->deferred);
}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return start_range(domain_sid(d), category_of(a), [a](ThreadLog& t) { return message_sid(t, a); });
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { end_range(id); }
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  if (d != nullptr && reinterpret_cast<const Domain*>(d)->deferred && a != nullptr &&
      a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii != nullptr)
    return push_deferred(domain_sid(d), a->category, payload_of(a), a->message.ascii);
  return push_range(domain_sid(d), category_of(a), payload_of(a), [a](ThreadLog& t) { return message_sid(t, a); });
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t d) { return pop_range(domain_sid(d)); }
void NVTX_API DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t c, const char* n) {
  name_category(domain_sid(d), c, ascii_text, n);
}
void NVTX_API DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t c, const wchar_t* n) {
  name_category(domain_sid(d), c, wide_text, n);
}
// Handles live as long as the process: NVTX gives no guarantee that a handle is no longer used.
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* s) {
  ThreadLog& t = this_thread_log();
  Appending a(t);
  auto* r = new RegisteredString{intern(t, s)};
  return reinterpret_cast<nvtxStringHandle_t>(r);
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
  ThreadLog& t = this_thread_log();
  Appending a(t);
  auto* r = new RegisteredString{intern_wide(t, s)};
  return reinterpret_cast<nvtxStringHandle_t>(r);
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  ThreadLog& t = this_thread_log();
  Appending a(t);
  auto* d = new Domain{intern(t, name), g_out.defer_operators && name != nullptr && kDeferredRangeDomain == name};
  return reinterpret_cast<nvtxDomainHandle_t>(d);
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) {
  ThreadLog& t = this_thread_log();
  Appending a(t);
  auto* d = new Domain{intern_wide(t, name), false};
  return reinterpret_cast<nvtxDomainHandle_t>(d);
}
// Kept alive: ranges recorded in the domain still refer to its name id, and a racing push may read it.
void NVTX_API DomainDestroy(nvtxDomainHandle_t) {}

// One module's function table of the NVTX instance: an array of pointers to the instance's function-pointer
// variables; slot 0 is unused and the table is `size` long. Null where the instance lacks the module.
struct ModuleTable {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;

  ModuleTable(const NvtxExportTableCallbacks& callbacks, NvtxCallbackModule module) {
    if (callbacks.GetModuleFunctionTable(module, &table, &size) == 0) table = nullptr;
  }
  explicit operator bool() const { return table != nullptr; }
  // Installs `fn` into slot `id`.
  template <typename Fn>
  void install(unsigned int id, Fn fn) const {
    if (table == nullptr || id == 0 || id >= size || table[id] == nullptr) return;
    *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
  }
};

// ------------------------------------------------------------------------------------------------
// CUPTI activity buffers: a fixed pool, written to the log by the completion callback

std::mutex g_pool_mu;
std::vector<std::uint8_t*> g_pool_free;
std::size_t g_pool_buffer_bytes = 0;
std::atomic<std::uint64_t> g_pool_exhausted{0};
WindowSnapshot g_snapshot_scratch;  // used under g_snapshot_mu only: too large for CUPTI's thread stack
std::mutex g_snapshot_mu;

void create_pool() {
  const std::size_t count = env_size(OPPROF_ENV_TRACE_BUFFERS, 16, 2, 1024);
  g_pool_buffer_bytes = env_size(OPPROF_ENV_TRACE_BUFFER_KB, 4096, 64, 1 << 20) * 1024;
  for (std::size_t i = 0; i < count; ++i) {
    void* p = std::aligned_alloc(64, g_pool_buffer_bytes);
    if (p != nullptr) g_pool_free.push_back(static_cast<std::uint8_t*>(p));
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (g_pool_free.empty()) {
    // Bounded memory: CUPTI drops what it cannot store and counts it; we report both.
    g_pool_exhausted.fetch_add(1, std::memory_order_relaxed);
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = g_pool_free.back();
  g_pool_free.pop_back();
  *size = g_pool_buffer_bytes;
}

// What only kernels, copies or fills have, beside the parts they share (write_device_activity).
void copy_own_fields(ThreadLog& t, KernelRecord& r, const CUpti_ActivityKernel10& k) {
  r.name_sid = intern(t, k.name);
  r.grid_x = k.gridX; r.grid_y = k.gridY; r.grid_z = k.gridZ;
  r.block_x = k.blockX; r.block_y = k.blockY; r.block_z = k.blockZ;
  r.static_shared_bytes = static_cast<std::uint32_t>(k.staticSharedMemory);
  r.dynamic_shared_bytes = static_cast<std::uint32_t>(k.dynamicSharedMemory);
  r.registers_per_thread = k.registersPerThread;
  r.launch_type = k.launchType;
}
void copy_own_fields(ThreadLog&, MemcpyRecord& r, const CUpti_ActivityMemcpy6& m) {
  r.copy_kind = m.copyKind;
  r.src_kind = m.srcKind;
  r.dst_kind = m.dstKind;
  r.flags = m.flags;
}
void copy_own_fields(ThreadLog&, MemsetRecord& r, const CUpti_ActivityMemset4& m) {
  r.value = m.value;
  r.memory_kind = m.memoryKind;
  r.flags = m.flags;
}

// A kernel, copy or fill inside the window (all of them without one): the parts the three share
// (format.hpp), under the same names in CUPTI's records and ours, then the fields of its own.
template <typename Ours, typename Cupti>
void write_device_activity(ThreadLog& t, RecordType type, const CUpti_Activity* rec, const WindowSnapshot* window) {
  const auto& a = *reinterpret_cast<const Cupti*>(rec);
  if (window != nullptr && !window->contains(a.correlationId)) return;
  Ours r{};
  r.start_ns = a.start;
  r.end_ns = a.end;
  r.graph_node_id = a.graphNodeId;
  if constexpr (std::is_base_of_v<TransferBytes, Ours>) r.bytes = a.bytes;
  r.correlation_id = a.correlationId;
  r.device_id = a.deviceId;
  r.context_id = a.contextId;
  r.stream_id = a.streamId;
  r.graph_id = a.graphId;
  copy_own_fields(t, r, a);
  append(t, type, r);
}

void write_activity(ThreadLog& t, const CUpti_Activity* rec, const WindowSnapshot* window) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return write_device_activity<KernelRecord, CUpti_ActivityKernel10>(t, RecordType::kKernel, rec, window);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return write_device_activity<MemcpyRecord, CUpti_ActivityMemcpy6>(t, RecordType::kMemcpy, rec, window);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return write_device_activity<MemsetRecord, CUpti_ActivityMemset4>(t, RecordType::kMemset, rec, window);
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(rec);
      DeviceRecord r{};
      r.global_memory_bytes = d->globalMemorySize;
      r.device_id = d->id;
      r.name_sid = intern(t, d->name);
      r.cc_major = d->computeCapabilityMajor;
      r.cc_minor = d->computeCapabilityMinor;
      r.sm_count = d->numMultiprocessors;
      append(t, RecordType::kDevice, r);
      return;
    }
    default: return;
  }
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  ThreadLog& t = this_thread_log();
  {
    std::lock_guard<std::mutex> snap_lock(g_snapshot_mu);
    const WindowSnapshot* window = nullptr;
    if (g_out.window_only) {
      std::lock_guard<std::mutex> lock(g_window_mu);
      g_snapshot_scratch.count = g_window_count;
      std::memcpy(g_snapshot_scratch.windows, g_windows, sizeof(Window) * g_window_count);
      window = &g_snapshot_scratch;
    }
    Appending a(t);
    CUpti_Activity* rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) write_activity(t, rec, window);
    std::size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped);
    if (dropped != 0) {
      DroppedRecord r{dropped, g_pool_exhausted.load()};
      append(t, RecordType::kDropped, r);
    }
    // Buffers reach the disk as they complete, so a crash loses at most what is still in flight.
    flush_buffer(t);
  }
  std::lock_guard<std::mutex> lock(g_pool_mu);
  g_pool_free.push_back(buffer);
}

// ------------------------------------------------------------------------------------------------
// CUPTI callbacks: capture window, graph nodes

std::uint64_t graph_node_id(CUgraphNode n) {
  std::uint64_t id = 0;
  if (n != nullptr) cuptiGetGraphNodeId(n, &id);
  return id;
}
std::uint32_t graph_id(CUgraph g) {
  std::uint32_t id = 0;
  if (g != nullptr) cuptiGetGraphId(g, &id);
  return id;
}

void on_graph_node_created(const CUpti_GraphData* g) {
  ThreadLog& t = this_thread_log();
  Appending a(t);
  // The creating thread is the capturing one: its NVTX stack is what the node's work belongs to.
  StackEntry entries[kMaxStackDepth];
  const std::uint32_t depth = stack_entries(t, entries);
  GraphNodeRecord r{};
  r.node_id = graph_node_id(g->node);
  r.ts_ns = cupti_now();
  r.tid = t.tid;
  r.graph_id = graph_id(g->graph);
  r.node_type = static_cast<std::uint32_t>(g->nodeType);
  r.depth = depth;
  append(t, RecordType::kGraphNode, r, entries, depth * sizeof(StackEntry));
}

void on_graph_node_cloned(const CUpti_GraphData* g) {
  ThreadLog& t = this_thread_log();
  Appending a(t);
  GraphNodeCloneRecord r{graph_node_id(g->node), graph_node_id(g->originalNode), graph_id(g->graph),
                         graph_id(g->originalGraph)};
  append(t, RecordType::kGraphNodeClone, r);
}

void on_graph_exec_created(const CUpti_GraphData* g) {
  std::uint32_t exec = 0;
  if (g->graphExec != nullptr) cuptiGetGraphExecId(g->graphExec, &exec);
  ThreadLog& t = this_thread_log();
  Appending a(t);
  GraphExecRecord r{exec, graph_id(g->graph)};
  append(t, RecordType::kGraphExec, r);
}

// ------------------------------------------------------------------------------------------------
// Stream capture, second route: at the exit of each launch into a capturing stream, ask the driver which
// node the launch added and record it with the launching thread's NVTX stack (CaptureLaunchRecord). This
// does not depend on when or on which thread the resource callbacks fire, and the record's correlation id,
// capture id and kernel name let the reader match replays to captures even when no node id lines up.

// cuStreamGetCaptureInfo in its two signatures: v3 (CUDA 12.3+, with edge data) and v2 (11.3+).
using CaptureInfoV3 = CUresult(CUDAAPI*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*, const CUgraphNode**,
                                         const CUgraphEdgeData**, size_t*);
using CaptureInfoV2 = CUresult(CUDAAPI*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*, const CUgraphNode**,
                                         size_t*);
using FuncGetName = CUresult(CUDAAPI*)(const char**, CUfunction);
using GetProcAddress = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

struct DriverEntryPoints {
  CaptureInfoV3 capture_info_v3 = nullptr;
  CaptureInfoV2 capture_info_v2 = nullptr;
  FuncGetName func_get_name = nullptr;
};
DriverEntryPoints g_driver;
std::once_flag g_driver_once;

// Resolved lazily, at the first launch during a capture: InitializeInjection runs inside cuInit, where
// asking the driver for entry points is best avoided. libcuda is loaded by then (RTLD_NOLOAD: never load
// a second copy). cuGetProcAddress gives the signature of the CUDA version we ask for, whatever the
// driver's own symbol names are.
void resolve_driver_entry_points() {
  std::call_once(g_driver_once, [] {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda == nullptr) {
      note("libcuda.so.1 is not loaded: graph capture is attributed through resource callbacks and launch order only");
      return;
    }
    auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(cuda, "cuGetProcAddress_v2"));
    auto lookup = [&](const char* name, int version) -> void* {
      void* fn = nullptr;
      CUdriverProcAddressQueryResult found{};
      if (get_proc != nullptr && get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) == CUDA_SUCCESS &&
          found == CU_GET_PROC_ADDRESS_SUCCESS)
        return fn;
      return nullptr;
    };
    g_driver.capture_info_v3 = reinterpret_cast<CaptureInfoV3>(lookup("cuStreamGetCaptureInfo", 12030));
    if (g_driver.capture_info_v3 == nullptr)
      g_driver.capture_info_v3 = reinterpret_cast<CaptureInfoV3>(dlsym(cuda, "cuStreamGetCaptureInfo_v3"));
    if (g_driver.capture_info_v3 == nullptr) {
      g_driver.capture_info_v2 = reinterpret_cast<CaptureInfoV2>(lookup("cuStreamGetCaptureInfo", 11030));
      if (g_driver.capture_info_v2 == nullptr)
        g_driver.capture_info_v2 = reinterpret_cast<CaptureInfoV2>(dlsym(cuda, "cuStreamGetCaptureInfo_v2"));
    }
    g_driver.func_get_name = reinterpret_cast<FuncGetName>(lookup("cuFuncGetName", 12030));
    if (g_driver.func_get_name == nullptr) g_driver.func_get_name = reinterpret_cast<FuncGetName>(dlsym(cuda, "cuFuncGetName"));
    if (g_driver.capture_info_v3 == nullptr && g_driver.capture_info_v2 == nullptr)
      note("cuStreamGetCaptureInfo not found: captured launches are recorded without node ids");
  });
}

struct CaptureState {
  bool capturing = false;
  std::uint64_t capture_id = 0;
  CUgraph graph = nullptr;
  CUgraphNode node = nullptr;  // the single dependency right after the launch: the node it added
};

// Asks the driver about `stream`. The dependency set is the node the launch just added when the capture
// is linear on this stream; with several dependencies (a join) the new node cannot be told, node stays null.
CaptureState query_capture(CUstream stream) {
  CaptureState s;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t count = 0;
  CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
  if (g_driver.capture_info_v3 != nullptr) {
    const CUgraphEdgeData* edges = nullptr;
    rc = g_driver.capture_info_v3(stream, &status, &id, &graph, &deps, &edges, &count);
  } else if (g_driver.capture_info_v2 != nullptr) {
    rc = g_driver.capture_info_v2(stream, &status, &id, &graph, &deps, &count);
  }
  if (rc != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_ACTIVE) return s;
  s.capturing = true;
  s.capture_id = id;
  s.graph = graph;
  if (count == 1 && deps != nullptr) s.node = deps[0];
  return s;
}

std::atomic<int> g_active_captures{0};  // BeginCapture..EndCapture spans open in the process

// What CUPTI records, and when. Window-only mode records GPU activity (kernels, memcpy, memset) only while a
// window is open, and takes launch callbacks only then or while a stream is being captured (its nodes replay
// later, inside a window, and need the stacks of capture time): outside its windows a process pays little.
// Without window mode everything is on from start-up. API records come from the launch callbacks, so they
// follow the same switch.
constexpr CUpti_ActivityKind kGpuActivityKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                                    CUPTI_ACTIVITY_KIND_MEMSET};
struct Recording {
  std::mutex mu;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> launch_callbacks;
  bool activity_on = false;
  bool launch_callbacks_on = false;
  bool failed = false;  // one note per process is enough
};
Recording g_recording;

void sync_recording() {
  Recording& r = g_recording;
  std::lock_guard<std::mutex> lock(r.mu);
  const bool activity = !g_out.window_only || !g_out.switch_at_windows || g_window_open.load();
  const bool launches = activity || g_active_captures.load() > 0;
  bool ok = true;
  if (activity != r.activity_on) {
    for (CUpti_ActivityKind kind : kGpuActivityKinds)
      ok &= (activity ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind)) == CUPTI_SUCCESS;
    r.activity_on = activity;
  }
  if (launches != r.launch_callbacks_on && r.subscriber != nullptr) {
    for (const auto& [domain, cbid] : r.launch_callbacks)
      ok &= cuptiEnableCallback(launches ? 1 : 0, r.subscriber, domain, cbid) == CUPTI_SUCCESS;
    r.launch_callbacks_on = launches;
  }
  if (!ok && !r.failed) {
    r.failed = true;
    note("CUPTI refused to switch some activity kinds or callbacks: parts of the trace may be missing");
  }
}

std::atomic<std::uint64_t> g_synthetic_captures{0};

// Per thread: API callbacks nest (cudaLaunchKernel may call cuLaunchKernel, both enabled); only the
// outermost call of a nest acts, so one launch gives one record.
thread_local int t_api_depth = 0;
thread_local CUstream t_capture_stream = nullptr;  // stream this thread began capturing, null when none
thread_local std::uint64_t t_capture_seq = 0;      // synthetic capture id of that span
thread_local std::uint64_t t_last_capture_node = 0;
thread_local bool t_in_tracer_query = false;  // our own driver calls must never re-enter this code

thread_local std::uint64_t t_launch_start = 0;  // entry time of this thread's outermost launch call

// kLaunch puts work on one stream (kernel, memcpy, memset) and may become a node of a graph being captured;
// kLaunchRecordOnly (graph launches, multi-device launches) is only recorded. Both get an API record.
enum class ApiRole : std::uint8_t { kOther, kLaunch, kLaunchRecordOnly, kBeginCapture, kEndCapture };

// Each domain's callback ids, classified once at start-up from CUPTI's own names.
constexpr std::size_t kMaxCbid = 4096;  // above every runtime and driver callback id of CUDA 13
ApiRole g_runtime_role[kMaxCbid];
ApiRole g_driver_role[kMaxCbid];

ApiRole classify_api(const char* name, bool runtime) {
  // Null-terminated: the two lists differ in length.
  static const char* const kRuntimeLaunch[] = {"cudaLaunch", "__cudaLaunch", "cudaMemcpy", "cudaMemset", nullptr};
  static const char* const kDriverLaunch[] = {"cuLaunch", "cuMemcpy", "cuMemset", nullptr};
  auto starts = [name](const char* p) { return std::strncmp(name, p, std::strlen(p)) == 0; };
  if (starts(runtime ? "cudaStreamBeginCapture" : "cuStreamBeginCapture")) return ApiRole::kBeginCapture;
  if (starts(runtime ? "cudaStreamEndCapture" : "cuStreamEndCapture")) return ApiRole::kEndCapture;
  if (starts(runtime ? "cudaGraphLaunch" : "cuGraphLaunch")) return ApiRole::kLaunchRecordOnly;
  for (const char* const* p = runtime ? kRuntimeLaunch : kDriverLaunch; *p != nullptr; ++p) {
    if (!starts(*p)) continue;
    // Multi-device cooperative launches take a list of streams: no single stream to ask about.
    return std::strstr(name, "MultiDevice") != nullptr ? ApiRole::kLaunchRecordOnly : ApiRole::kLaunch;
  }
  return ApiRole::kOther;
}

ApiRole role_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (cbid >= kMaxCbid) return ApiRole::kOther;
  return domain == CUPTI_CB_DOMAIN_RUNTIME_API ? g_runtime_role[cbid] : g_driver_role[cbid];
}

// What the parameters of a launch whose layout is known (generated_cuda_*_meta.h) say: its stream, where
// they hold one, and for driver launches the CUfunction, to name the kernel when CUPTI gives no symbolName.
// Without a stream the caller falls back to the stream the thread is capturing.
struct LaunchTarget {
  std::optional<CUstream> stream;
  CUfunction function = nullptr;
};

// The stream of a parameter struct or launch config (which may be null): the runtime's stream, the driver's
// hStream.
template <typename Holder>
std::optional<CUstream> stream_in(const Holder* h) {
  if (h == nullptr) return std::nullopt;
  if constexpr (requires { h->hStream; })
    return h->hStream;
  else
    return reinterpret_cast<CUstream>(h->stream);
}

template <typename Params>
LaunchTarget decode_launch(const void* params) {
  const auto* p = static_cast<const Params*>(params);
  LaunchTarget t;
  if constexpr (requires { p->f; }) t.function = p->f;
  if constexpr (requires { p->config; })  // the *Ex launches: the stream is in the launch config
    t.stream = stream_in(p->config);
  else
    t.stream = stream_in(p);
  return t;
}

// The launch APIs whose parameters are decoded, each with its per-thread-default-stream (_ptsz) twin.
struct KnownLaunch {
  CUpti_CallbackId cbid, cbid_ptsz;
  LaunchTarget (*decode)(const void*);
};
constexpr KnownLaunch kRuntimeLaunches[] = {
    {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
     decode_launch<cudaLaunchKernel_v7000_params>},
    {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
     CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
     decode_launch<cudaLaunchCooperativeKernel_v9000_params>},
    {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
     decode_launch<cudaLaunchKernelExC_v11060_params>},
};
constexpr KnownLaunch kDriverLaunches[] = {
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
     decode_launch<cuLaunchKernel_params>},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
     decode_launch<cuLaunchCooperativeKernel_params>},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
     decode_launch<cuLaunchKernelEx_params>},
};

LaunchTarget launch_target(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params) {
  if (params == nullptr) return {};
  for (const KnownLaunch& l : domain == CUPTI_CB_DOMAIN_RUNTIME_API ? kRuntimeLaunches : kDriverLaunches)
    if (cbid == l.cbid || cbid == l.cbid_ptsz) return l.decode(params);
  return {};
}

bool api_succeeded(const CUpti_CallbackData* api) {
  // cudaError_t and CUresult are both int-sized enums with 0 = success.
  return api->functionReturnValue == nullptr || *static_cast<const int*>(api->functionReturnValue) == 0;
}

// The first field of every BeginCapture / EndCapture parameter struct is the stream.
CUstream first_param_stream(const void* params) {
  CUstream s = nullptr;
  if (params != nullptr) std::memcpy(&s, params, sizeof s);
  return s;
}

void on_begin_capture(const CUpti_CallbackData* api) {
  if (!api_succeeded(api) || t_capture_seq != 0) return;
  t_capture_stream = first_param_stream(api->functionParams);
  t_capture_seq = kSyntheticCaptureBit | (g_synthetic_captures.fetch_add(1, std::memory_order_relaxed) + 1);
  t_last_capture_node = 0;
  g_active_captures.fetch_add(1, std::memory_order_relaxed);
  sync_recording();
}

void on_end_capture() {
  if (t_capture_seq == 0) return;  // ended on a thread that did not begin it: the count stays (costs queries only)
  t_capture_stream = nullptr;
  t_capture_seq = 0;
  t_last_capture_node = 0;
  g_active_captures.fetch_sub(1, std::memory_order_relaxed);
  sync_recording();
}

void on_launch_exit(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* api) {
  // Fast exit for the common case: nothing is being captured anywhere.
  if (g_active_captures.load(std::memory_order_relaxed) <= 0 || !api_succeeded(api)) return;
  resolve_driver_entry_points();
  const bool can_query = g_driver.capture_info_v3 != nullptr || g_driver.capture_info_v2 != nullptr;
  const LaunchTarget target = launch_target(domain, cbid, api->functionParams);
  const bool known_stream = target.stream.has_value();
  const CUstream stream = target.stream.value_or(t_capture_stream);

  std::uint64_t capture_id = 0, node_id = 0;
  std::uint32_t graph = 0;
  if (can_query && (known_stream || t_capture_seq != 0)) {
    t_in_tracer_query = true;
    const CaptureState c = query_capture(stream);
    t_in_tracer_query = false;
    if (!c.capturing) return;  // this launch went to a stream that is not being captured
    capture_id = c.capture_id;
    graph = graph_id(c.graph);
    node_id = graph_node_id(c.node);
    // Unchanged dependency: the launch did not extend this stream's capture (it went to another stream of a
    // multi-stream capture and we asked about ours); its node is unknown, the name route still holds.
    if (!known_stream && node_id == t_last_capture_node) node_id = 0;
    if (node_id != 0) t_last_capture_node = node_id;
  } else if (t_capture_seq != 0) {
    capture_id = t_capture_seq;  // no way to ask the driver: this thread's capture span stands for it
  } else {
    return;
  }

  ThreadLog& t = this_thread_log();
  Appending a(t);
  const char* name = api->symbolName;
  if (name == nullptr && g_driver.func_get_name != nullptr) {
    if (target.function != nullptr) {
      t_in_tracer_query = true;
      if (g_driver.func_get_name(&name, target.function) != CUDA_SUCCESS) name = nullptr;
      t_in_tracer_query = false;
    }
  }
  StackEntry entries[kMaxStackDepth];
  const std::uint32_t depth = stack_entries(t, entries);
  CaptureLaunchRecord r{};
  r.node_id = node_id;
  r.capture_id = capture_id;
  r.ts_ns = cupti_now();
  r.tid = t.tid;
  r.correlation_id = api->correlationId;
  r.graph_id = graph;
  r.name_sid = name != nullptr ? intern(t, name) : 0u;
  r.cbid = cbid;
  r.domain = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? kApiDomainRuntime : kApiDomainDriver;
  r.depth = depth;
  append(t, RecordType::kCaptureLaunch, r, entries, depth * sizeof(StackEntry));
}

// The API record of a launch, written when the outermost launch call of a nest returns. Its correlation id
// is the one CUPTI gives the kernel, memcpy or memset records of that launch. Written from the callbacks
// rather than taken from CUPTI's API activity records: those cannot be switched on and off with the window
// (enabled from the cudaProfilerStart callback, none arrived on the H200), so they cost every launch of the
// program, and these cost only the launches inside a window.
void write_launch_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* api) {
  const std::uint64_t start = std::exchange(t_launch_start, 0);
  if (!nvtx_recording()) return;  // a launch during a capture outside the window
  const std::uint64_t end = cupti_now();
  ThreadLog& t = this_thread_log();
  Appending a(t);
  ApiCallRecord r{};
  // No entry time when the callbacks were switched on (by another thread's cudaProfilerStart) during the call.
  r.start_ns = start != 0 ? start : end;
  r.end_ns = end;
  r.tid = t.tid;
  r.pid = 0;  // the header's
  r.correlation_id = api->correlationId;
  r.cbid = cbid;
  r.domain = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? kApiDomainRuntime : kApiDomainDriver;
  append(t, RecordType::kApiCall, r);
}

// A launch is about to happen: the deferred ranges around it are written (with their start times).
void on_launch_enter() {
  ThreadLog* t = t_log;
  if (t == nullptr || t->unwritten == 0 || !nvtx_recording()) return;
  Appending a(*t);
  materialize(*t, true);
}

void on_api_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* api) {
  if (t_in_tracer_query) return;
  const bool profiler_start = (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000) ||
                              (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
  const bool profiler_stop = (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000) ||
                             (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
  if (profiler_start || profiler_stop) {
    if (api->callbackSite == CUPTI_API_ENTER) window_event(profiler_start, api->correlationId);
    return;
  }
  if (api->callbackSite == CUPTI_API_ENTER) {
    if (t_api_depth++ == 0) {
      const ApiRole role = role_of(domain, cbid);
      if (role == ApiRole::kLaunch || role == ApiRole::kLaunchRecordOnly) {
        on_launch_enter();
        t_launch_start = cupti_now();
      }
    }
    return;
  }
  if (t_api_depth > 0) --t_api_depth;
  if (t_api_depth != 0) return;  // an inner call of a nest: the outermost one acts
  switch (role_of(domain, cbid)) {
    case ApiRole::kLaunch:
      write_launch_call(domain, cbid, api);
      on_launch_exit(domain, cbid, api);
      break;
    case ApiRole::kLaunchRecordOnly: write_launch_call(domain, cbid, api); break;
    case ApiRole::kBeginCapture: on_begin_capture(api); break;
    case ApiRole::kEndCapture: on_end_capture(); break;
    case ApiRole::kOther: break;
  }
}

// Enables the callbacks of a domain's capture calls, lists its launch calls for sync_recording and names
// them in the log (the classification comes from CUPTI's names, so new launch variants are covered without
// a list of ids).
void enable_api_callbacks(CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain, std::uint32_t count) {
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  ApiRole* roles = runtime ? g_runtime_role : g_driver_role;
  ThreadLog& t = this_thread_log();
  std::size_t failed = 0;
  for (std::uint32_t cbid = 1; cbid < count && cbid < kMaxCbid; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    const ApiRole role = classify_api(name, runtime);
    if (role == ApiRole::kOther) continue;
    if (role == ApiRole::kLaunch || role == ApiRole::kLaunchRecordOnly) {
      g_recording.launch_callbacks.emplace_back(domain, cbid);
      Appending a(t);
      ApiNameRecord r{runtime ? kApiDomainRuntime : kApiDomainDriver, cbid, intern(t, name), 0};
      append(t, RecordType::kApiName, r);
    } else if (cuptiEnableCallback(1, subscriber, domain, cbid) != CUPTI_SUCCESS) {
      ++failed;
      continue;
    }
    roles[cbid] = role;
  }
  if (failed != 0) note("some capture callbacks could not be enabled: fewer captured launches are recorded");
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    on_api_callback(domain, cbid, static_cast<const CUpti_CallbackData*>(data));
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RESOURCE) return;
  const auto* res = static_cast<const CUpti_ResourceData*>(data);
  const auto* g = static_cast<const CUpti_GraphData*>(res->resourceDescriptor);
  if (g == nullptr) return;
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED: on_graph_node_created(g); break;
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: on_graph_node_cloned(g); break;
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED: on_graph_exec_created(g); break;
    default: break;
  }
}

// ------------------------------------------------------------------------------------------------
// Flushing: at exit, and on SIGINT/SIGTERM through a helper thread (signal handlers may not take locks)

std::atomic<bool> g_cupti_active{false};  // InitializeInjection ran: CUPTI has buffers to flush

void flush_everything() {
  if (g_cupti_active.load()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  flush_all_thread_logs();
}

void at_exit() {
  if (g_out.finished.exchange(true)) return;
  flush_everything();
  // A log of its own: the exiting thread's thread_local one may already be given back.
  ThreadLog& t = *acquire_thread_log();
  t.tid = os_tid();
  {
    Appending a(t);
    DroppedRecord d{0, g_pool_exhausted.load()};
    if (d.pool_exhausted_requests != 0) append(t, RecordType::kDropped, d);
    std::uint64_t records = 0;
    for (ThreadLog* l = g_thread_logs.load(std::memory_order_acquire); l != nullptr; l = l->next)
      records += l->records.load(std::memory_order_relaxed);
    TrailerRecord r{cupti_now(), clock_ns(CLOCK_MONOTONIC), records,
                    g_out.next_string_id.load() - 1u};
    append(t, RecordType::kTrailer, r);
    flush_buffer(t);
  }
  if (g_out.fd >= 0) fsync(g_out.fd);
}

sem_t g_flush_request;
std::atomic<std::uint32_t> g_flush_generation{0};
struct sigaction g_prev_sigint {};
struct sigaction g_prev_sigterm {};

void flusher_thread() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // signals must reach the other threads, not this one
  for (;;) {
    if (sem_wait(&g_flush_request) != 0) continue;
    flush_everything();
    if (g_out.fd >= 0) fsync(g_out.fd);
    g_flush_generation.fetch_add(1, std::memory_order_release);
  }
}

void on_fatal_signal(int sig) {
  const int saved_errno = errno;
  const std::uint32_t gen = g_flush_generation.load(std::memory_order_acquire);
  sem_post(&g_flush_request);  // async-signal-safe
  timespec pause{0, 5 * 1000 * 1000};
  for (int i = 0; i < 600 && g_flush_generation.load(std::memory_order_acquire) == gen; ++i) nanosleep(&pause, nullptr);
  // Hand the signal to whoever had it before us (Python's KeyboardInterrupt handler, the default action).
  sigaction(sig, sig == SIGINT ? &g_prev_sigint : &g_prev_sigterm, nullptr);
  errno = saved_errno;
  raise(sig);
}

void install_signal_handlers() {
  if (sem_init(&g_flush_request, 0, 0) != 0) return;
  std::thread(flusher_thread).detach();
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction* prev = sig == SIGINT ? &g_prev_sigint : &g_prev_sigterm;
    if (sigaction(sig, nullptr, prev) != 0) continue;
    if (prev->sa_handler == SIG_IGN) continue;  // the program chose to ignore it: keep that
    sigaction(sig, &sa, nullptr);
  }
}

bool check(CUptiResult rc, const char* what) {
  if (rc == CUPTI_SUCCESS) return true;
  const char* err = nullptr;
  cuptiGetResultString(rc, &err);
  std::string msg = std::string(what) + " failed: " + (err != nullptr ? err : "unknown CUPTI error");
  note(msg.c_str());
  return false;
}

// The callbacks enabled by id, beside the API calls enable_api_callbacks finds by name: the window's
// profiler start/stop calls of both APIs, and the graph events of the resource domain.
struct FixedCallback {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  const char* what;  // for the message when enabling fails
};
constexpr FixedCallback kFixedCallbacks[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, "callback cudaProfilerStart"},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, "callback cudaProfilerStop"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, "callback cuProfilerStart"},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, "callback cuProfilerStop"},
    {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, "callback GRAPHNODE_CREATED"},
    {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, "callback GRAPHNODE_CLONED"},
    {CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, "callback GRAPHEXEC_CREATED"},
};

}  // namespace

// ------------------------------------------------------------------------------------------------
// Entry points

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::atomic<bool> initialized{false};
  if (initialized.exchange(true)) return 1;
  open_output();
  if (g_out.fd < 0) return 0;

  create_pool();
  if (!check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks"))
    return 0;
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE), "enable DEVICE");

  CUpti_SubscriberHandle subscriber = nullptr;
  if (check(cuptiSubscribe(&subscriber, on_callback, nullptr), "cuptiSubscribe")) {
    for (const FixedCallback& c : kFixedCallbacks)
      check(cuptiEnableCallback(1, subscriber, c.domain, c.cbid), c.what);
    enable_api_callbacks(subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
    enable_api_callbacks(subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
    std::lock_guard<std::mutex> lock(g_recording.mu);
    g_recording.subscriber = subscriber;
  }
  sync_recording();
  {
    ThreadLog& t = this_thread_log();
    Appending a(t);
    flush_buffer(t);  // the API name table reaches the disk first
  }
  g_cupti_active.store(true);
  install_signal_handlers();
  return 1;
}

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  if (get_table == nullptr) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr)
    return 0;
  open_output();

  const ModuleTable core(*callbacks, NVTX_CB_MODULE_CORE);
  if (!core) return 0;
  core.install(NVTX_CBID_CORE_MarkEx, MarkEx);
  core.install(NVTX_CBID_CORE_MarkA, MarkA);
  core.install(NVTX_CBID_CORE_MarkW, MarkW);
  core.install(NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
  core.install(NVTX_CBID_CORE_RangeStartA, RangeStartA);
  core.install(NVTX_CBID_CORE_RangeStartW, RangeStartW);
  core.install(NVTX_CBID_CORE_RangeEnd, RangeEnd);
  core.install(NVTX_CBID_CORE_RangePushEx, RangePushEx);
  core.install(NVTX_CBID_CORE_RangePushA, RangePushA);
  core.install(NVTX_CBID_CORE_RangePushW, RangePushW);
  core.install(NVTX_CBID_CORE_RangePop, RangePop);
  core.install(NVTX_CBID_CORE_NameCategoryA, NameCategoryA);
  core.install(NVTX_CBID_CORE_NameCategoryW, NameCategoryW);
  core.install(NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
  core.install(NVTX_CBID_CORE_NameOsThreadW, NameOsThreadW);
  // Core2 (domains) exists from NVTX v2 on; an old instance without it still gets the core handlers.
  const ModuleTable core2(*callbacks, NVTX_CB_MODULE_CORE2);
  core2.install(NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
  core2.install(NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
  core2.install(NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
  core2.install(NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
  core2.install(NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
  core2.install(NVTX_CBID_CORE2_DomainNameCategoryA, DomainNameCategoryA);
  core2.install(NVTX_CBID_CORE2_DomainNameCategoryW, DomainNameCategoryW);
  core2.install(NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
  core2.install(NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
  core2.install(NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
  core2.install(NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
  core2.install(NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
  return 1;
}
