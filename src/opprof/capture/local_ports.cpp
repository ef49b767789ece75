#include "opprof/capture/local_ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace opprof {
namespace {

// Binds 127.0.0.1:port (0: any free one); the bound port, or 0 when it is taken.
int bind_loopback(int port, int& fd) {
  fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t length = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    ::close(fd);
    fd = -1;
    return 0;
  }
  return ntohs(addr.sin_port);
}

}  // namespace

int free_local_port_pair() {
  for (int attempt = 0; attempt < 32; ++attempt) {
    int first_fd = -1, second_fd = -1;
    const int port = bind_loopback(0, first_fd);
    const bool pair = port > 0 && port < 65535 && bind_loopback(port + 1, second_fd) == port + 1;
    if (first_fd >= 0) ::close(first_fd);
    if (second_fd >= 0) ::close(second_fd);
    if (pair) return port;
  }
  return 0;
}

}  // namespace opprof
