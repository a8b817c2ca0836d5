//
// example/echo_server.cpp
//
// A coroutine echo server on turnloop::loop.
//
//   echo_server [port]    serve until interrupted (default port 5555)
//   echo_server --once    serve on a free port, run a client against it,
//                         check the echo, and exit (0 on success)
//

#include <turnloop.hpp>

#include <turnloop/asio.hpp>

#include <array>
#include <cstdlib>
#include <iostream>
#include <string>

namespace net = turnloop::asio; // Boost.Asio, or standalone Asio
using net::awaitable;
using net::use_awaitable;
using net::ip::tcp;

awaitable<void> session(tcp::socket socket)
{
  std::array<char, 4096> data;
  for (;;)
  {
    auto [ec, n] = co_await socket.async_read_some(net::buffer(data),
        net::as_tuple(use_awaitable));
    if (ec)
      co_return; // end of stream or error: the session ends
    co_await net::async_write(socket, net::buffer(data, n), use_awaitable);
  }
}

awaitable<void> listen(tcp::acceptor& acceptor)
{
  for (;;)
  {
    tcp::socket socket = co_await acceptor.async_accept(use_awaitable);
    net::co_spawn(acceptor.get_executor(), session(std::move(socket)),
        net::detached);
  }
}

awaitable<bool> client(tcp::endpoint server)
{
  tcp::socket socket(co_await net::this_coro::executor);
  co_await socket.async_connect(server, use_awaitable);
  for (int i = 0; i < 100; ++i)
  {
    const std::string message = "message " + std::to_string(i);
    co_await net::async_write(socket, net::buffer(message), use_awaitable);
    std::string reply(message.size(), '\0');
    co_await net::async_read(socket, net::buffer(reply), use_awaitable);
    if (reply != message)
      co_return false;
  }
  co_return true;
}

int main(int argc, char* argv[])
{
  const bool once = argc > 1 && std::string(argv[1]) == "--once";
  const unsigned short port = (argc > 1 && !once)
    ? static_cast<unsigned short>(std::atoi(argv[1])) : (once ? 0 : 5555);

  turnloop::loop loop;
  tcp::acceptor acceptor(loop, {net::ip::address_v4::loopback(), port});
  net::co_spawn(loop, listen(acceptor), net::detached);

  if (!once)
  {
    std::cout << "echo server on " << acceptor.local_endpoint() << "\n";
    net::signal_set signals(loop, SIGINT, SIGTERM);
    signals.async_wait([&](auto, int) { loop.stop(); });
    loop.run();
    return 0;
  }

  bool ok = false;
  net::co_spawn(loop, client(acceptor.local_endpoint()),
      [&](std::exception_ptr e, bool echoed) {
        ok = !e && echoed;
        loop.stop();
      });
  loop.run();
  std::cout << (ok ? "echoed 100 messages\n" : "echo failed\n");
  return ok ? 0 : 1;
}
