#pragma once
// Ports on this machine's loopback for ncu's launch/attach handshake (pass B started early).

#include <string_view>
#include <utility>

namespace opprof {

// The kernel's range of ephemeral ports (net.ipv4.ip_local_port_range), parsed from that file's text
// ("32768\t60999\n"); {0, 0} when the text is not two ports.
std::pair<int, int> parse_ephemeral_port_range(std::string_view text);

// A port P such that P and P + 1 are free on 127.0.0.1 now (bound and released), taken below the kernel's
// ephemeral range where that leaves room: ncu's launch listens on them only when the workload reaches its first
// CUDA call, seconds later, and an ephemeral port may meanwhile go to any outgoing connection on the machine.
// Another process may still take them before ncu does, which then fails to attach and pass B starts after
// pass A instead. 0 when no pair was found.
int free_local_port_pair();

}  // namespace opprof
