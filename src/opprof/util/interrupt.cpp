#include "opprof/util/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace opprof {
namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_signal_count{0};
std::atomic<int> g_defer_depth{0};
// The running children's process groups (pass B can run beside pass A): slots the handler reads without
// locking; 0 is a free slot.
constexpr std::size_t kMaxChildGroups = 4;
std::array<std::atomic<pid_t>, kMaxChildGroups> g_child_groups{};

// The registered temporaries: a fixed table the handler reads without locking. A slot is published by
// the release store of `used` after its path is written, and retired before its path is reused.
constexpr std::size_t kMaxTemporaries = 8;
constexpr std::size_t kMaxPath = 4096;
struct Slot {
  std::atomic<bool> used{false};
  char path[kMaxPath] = {};
};
std::array<Slot, kMaxTemporaries> g_temporaries;
std::mutex g_temporaries_mutex;  // between registering threads, never taken by the handler

void on_interrupt(int sig) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
  const int count = ++g_signal_count;
  for (const std::atomic<pid_t>& slot : g_child_groups)
    if (const pid_t group = slot.load(); group > 0) (void)::kill(-group, count > 1 ? SIGKILL : sig);
  if (g_defer_depth.load() > 0) return;
  for (Slot& s : g_temporaries)
    if (s.used.load(std::memory_order_acquire)) (void)::unlink(s.path);
  // End by the signal itself, so that the parent (a shell, a job runner) sees how the process ended.
  ::signal(sig, SIG_DFL);
  (void)::raise(sig);
}

}  // namespace

void install_interrupt_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa{};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  });
}

int interrupt_signal() { return g_signal.load(); }

DeferInterrupts::DeferInterrupts() { ++g_defer_depth; }
DeferInterrupts::~DeferInterrupts() { --g_defer_depth; }

ForwardInterrupts::ForwardInterrupts(pid_t pgid) {
  for (std::atomic<pid_t>& slot : g_child_groups) {
    pid_t free_slot = 0;
    if (slot.compare_exchange_strong(free_slot, pgid)) {
      slot_ = &slot;
      return;
    }
  }
  // More children than slots: opprof runs at most two at a time, so this is a bug, not a user's problem.
  std::abort();
}
ForwardInterrupts::~ForwardInterrupts() {
  if (slot_) static_cast<std::atomic<pid_t>*>(slot_)->store(0);
}

void register_temporary(const std::string& path) {
  if (path.size() >= kMaxPath) return;  // no such paths on Linux (PATH_MAX); then simply not cleaned up early
  std::lock_guard lock(g_temporaries_mutex);
  for (Slot& s : g_temporaries) {
    if (s.used.load(std::memory_order_relaxed)) continue;
    std::memcpy(s.path, path.c_str(), path.size() + 1);
    s.used.store(true, std::memory_order_release);
    return;
  }
}

void unregister_temporary(const std::string& path) {
  std::lock_guard lock(g_temporaries_mutex);
  for (Slot& s : g_temporaries)
    if (s.used.load(std::memory_order_relaxed) && path == s.path) {
      s.used.store(false, std::memory_order_release);
      return;
    }
}

void pause_point(const char* name) {
  const char* wanted = std::getenv("OPPROF_PAUSE_AT");
  if (wanted && std::strcmp(wanted, name) == 0) (void)::raise(SIGSTOP);
}

}  // namespace opprof
