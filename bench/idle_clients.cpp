//
// bench/idle_clients.cpp
//
// The clients of bench/memory.cpp's idle_connections, in a process of their
// own so that the server's resident set is its own:
//
//   idle_clients <port> <connections>
//
// Opens the connections to 127.0.0.1:<port>, then holds them until its
// stdin closes. Exit status 0, or 1 if a connection failed, 2 on a bad
// command line.
//

#include "support/process.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

// The client process: opens n connections, then waits for stdin to close.
// Plain blocking sockets, so its only job is to hold the connections.
int run(unsigned short port, std::size_t n)
{
  bench::raise_descriptor_limit();
  sockaddr_in server{};
  server.sin_family = AF_INET;
  server.sin_port = htons(port);
  server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::vector<int> sockets;
  sockets.reserve(n);
  for (std::size_t i = 0; i != n; ++i)
  {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&server),
          sizeof server) != 0)
    {
      std::fprintf(stderr, "idle_clients: connection %zu: %s\n", i,
          std::strerror(errno));
      return 1;
    }
    sockets.push_back(fd);
  }
  char byte;
  while (::read(0, &byte, 1) > 0)
  {
  }
  return 0;
}

} // namespace

int main(int argc, char** argv)
{
  char* end = nullptr;
  const unsigned long port = argc == 3 ? std::strtoul(argv[1], &end, 10) : 0;
  if (argc != 3 || *end != '\0' || port == 0 || port > 65535)
  {
    std::fprintf(stderr, "usage: idle_clients <port> <connections>\n");
    return 2;
  }
  return run(static_cast<unsigned short>(port),
      std::strtoul(argv[2], nullptr, 10));
}
