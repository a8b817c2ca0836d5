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

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <cstdlib>
#include <iostream>
#include <string>

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;

awaitable<void> session(tcp::socket socket)
{
  std::array<char, 4096> data;
  for (;;)
  {
    auto [ec, n] = co_await socket.async_read_some(asio::buffer(data),
        asio::as_tuple(use_awaitable));
    if (ec)
      co_return; // end of stream or error: the session ends
    co_await asio::async_write(socket, asio::buffer(data, n), use_awaitable);
  }
}

awaitable<void> listen(tcp::acceptor& acceptor)
{
  for (;;)
  {
    tcp::socket socket = co_await acceptor.async_accept(use_awaitable);
    asio::co_spawn(acceptor.get_executor(), session(std::move(socket)),
        asio::detached);
  }
}

awaitable<bool> client(tcp::endpoint server)
{
  tcp::socket socket(co_await asio::this_coro::executor);
  co_await socket.async_connect(server, use_awaitable);
  for (int i = 0; i < 100; ++i)
  {
    const std::string message = "message " + std::to_string(i);
    co_await asio::async_write(socket, asio::buffer(message), use_awaitable);
    std::string reply(message.size(), '\0');
    co_await asio::async_read(socket, asio::buffer(reply), use_awaitable);
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
  tcp::acceptor acceptor(loop, {asio::ip::address_v4::loopback(), port});
  asio::co_spawn(loop, listen(acceptor), asio::detached);

  if (!once)
  {
    std::cout << "echo server on " << acceptor.local_endpoint() << "\n";
    asio::signal_set signals(loop, SIGINT, SIGTERM);
    signals.async_wait([&](auto, int) { loop.stop(); });
    loop.run();
    return 0;
  }

  bool ok = false;
  asio::co_spawn(loop, client(acceptor.local_endpoint()),
      [&](std::exception_ptr e, bool echoed) {
        ok = !e && echoed;
        loop.stop();
      });
  loop.run();
  std::cout << (ok ? "echoed 100 messages\n" : "echo failed\n");
  return ok ? 0 : 1;
}
