#pragma once
// SIGINT and SIGTERM, handled so that an interrupted run loses nothing and leaves nothing behind.
//
// Two regimes:
//  - by default the handler removes the temporaries registered below (a database half written) and ends
//    the process by the same signal (exit status 128 + signal), at once: `opprof attribute` and the
//    attribution after the passes of `opprof profile` have nothing else to undo;
//  - inside a DeferInterrupts scope it only records the signal: the scope's owner (the capture passes,
//    which hold the clock lock and the workload) checks interrupted() and winds down itself.
// In both, a running child process group (ForwardInterrupts) is sent the signal too, and SIGKILL on a
// second one: the workload runs in a process group of its own, which a Ctrl-C at the terminal or a
// `kill <opprof pid>` would otherwise not reach.
#include <sys/types.h>

#include <string>

namespace opprof {

// Installs the handlers for the rest of the process (idempotent).
void install_interrupt_handlers();

// The signal that came (SIGINT or SIGTERM), 0 when none did.
int interrupt_signal();
inline bool interrupted() { return interrupt_signal() != 0; }

class DeferInterrupts {
 public:
  DeferInterrupts();
  ~DeferInterrupts();
  DeferInterrupts(const DeferInterrupts&) = delete;
  DeferInterrupts& operator=(const DeferInterrupts&) = delete;
};

// While alive, interrupts reach the process group pgid (up to four groups at a time: pass B may run beside
// pass A).
class ForwardInterrupts {
 public:
  explicit ForwardInterrupts(pid_t pgid);
  ~ForwardInterrupts();
  ForwardInterrupts(const ForwardInterrupts&) = delete;
  ForwardInterrupts& operator=(const ForwardInterrupts&) = delete;

 private:
  void* slot_ = nullptr;  // its entry in the handler's table
};

// Files the handler removes before the process ends by a signal (at most a few at a time; paths are
// copied into a fixed table, since the handler may not allocate).
void register_temporary(const std::string& path);
void unregister_temporary(const std::string& path);

// A named stage of a long write where tests interrupt the process: when the environment's OPPROF_PAUSE_AT
// names it, the process stops itself there (SIGSTOP), so that a test can signal it at exactly that stage
// and let it continue (SIGCONT). Nothing happens otherwise.
void pause_point(const char* name);

}  // namespace opprof
