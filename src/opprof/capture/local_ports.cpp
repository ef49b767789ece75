#include "opprof/capture/local_ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

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

// Whether port and port + 1 could both be bound (0: any port, then its successor).
int try_pair(int port) {
  int first_fd = -1, second_fd = -1;
  const int bound = bind_loopback(port, first_fd);
  const bool pair = bound > 0 && bound < 65535 && bind_loopback(bound + 1, second_fd) == bound + 1;
  if (first_fd >= 0) ::close(first_fd);
  if (second_fd >= 0) ::close(second_fd);
  return pair ? bound : 0;
}

// Below the registered ports most services listen on: the candidates start here.
constexpr int kLowestCandidate = 20000;

}  // namespace

std::pair<int, int> parse_ephemeral_port_range(std::string_view text) {
  int ports[2] = {0, 0};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int& port : ports) {
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    const auto [next, ec] = std::from_chars(p, end, port);
    if (ec != std::errc() || port <= 0 || port > 65535) return {0, 0};
    p = next;
  }
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n')) ++p;
  if (p != end || ports[0] > ports[1]) return {0, 0};
  return {ports[0], ports[1]};
}

int free_local_port_pair() {
  std::ifstream file("/proc/sys/net/ipv4/ip_local_port_range");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const int ephemeral_low = parse_ephemeral_port_range(text).first;
  if (ephemeral_low - 2 > kLowestCandidate) {
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> candidate(kLowestCandidate, ephemeral_low - 2);
    for (int attempt = 0; attempt < 32; ++attempt)
      if (const int port = try_pair(candidate(random))) return port;
  }
  for (int attempt = 0; attempt < 32; ++attempt)
    if (const int port = try_pair(0)) return port;
  return 0;
}

}  // namespace opprof
