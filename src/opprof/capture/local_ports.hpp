#pragma once
// Ports on this machine's loopback for ncu's launch/attach handshake (pass B started early).

namespace opprof {

// A port P such that P and P + 1 are free on 127.0.0.1 now (bound and released: another process may take
// them before ncu does, which then fails to attach and pass B starts after pass A instead); 0 when no pair
// was found.
int free_local_port_pair();

}  // namespace opprof
