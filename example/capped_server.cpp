//
// example/capped_server.cpp
//
// An echo server whose live connections are capped by config::max_handles.
// It accepts with turnloop::async_accept, so once `max` connections are open
// it stops calling accept: further clients wait in the kernel's listen
// backlog, connected but not accepted (not refused, not reset), and are
// served in turn as earlier connections close.
//
//   capped_server [port [max]]   serve until interrupted (default 5556, 3)
//   capped_server --once         serve on a free port with a cap of 3, run
//                                10 clients at once against it, check that
//                                each got its echo and that no more than 3
//                                connections were ever open, and exit (0 on
//                                success)
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

// Echoes until the client closes. The connection's handle is given back
// when `socket` is destroyed, at the end of the session.
awaitable<void> session(turnloop::accepted_socket<tcp> socket)
{
  std::array<char, 1024> data;
  for (;;)
  {
    auto [ec, n] = co_await socket.async_read_some(net::buffer(data),
        net::as_tuple(use_awaitable));
    if (ec)
      co_return;
    co_await net::async_write(socket, net::buffer(data, n), use_awaitable);
  }
}

awaitable<void> listen(tcp::acceptor& acceptor)
{
  for (;;)
  {
    turnloop::accepted_socket<tcp> socket =
      co_await turnloop::async_accept(acceptor, use_awaitable);
    net::co_spawn(acceptor.get_executor(), session(std::move(socket)),
        net::detached);
  }
}

// Sends one message, checks the echo, and closes.
awaitable<bool> client(tcp::endpoint server, int id)
{
  tcp::socket socket(co_await net::this_coro::executor);
  co_await socket.async_connect(server, use_awaitable);
  const std::string message = "client " + std::to_string(id);
  co_await net::async_write(socket, net::buffer(message), use_awaitable);
  std::string reply(message.size(), '\0');
  co_await net::async_read(socket, net::buffer(reply), use_awaitable);
  co_return reply == message;
}

int main(int argc, char* argv[])
{
  const bool once = argc > 1 && std::string(argv[1]) == "--once";
  const unsigned short port = (argc > 1 && !once)
    ? static_cast<unsigned short>(std::atoi(argv[1])) : (once ? 0 : 5556);
  turnloop::config cfg;
  cfg.max_handles = (argc > 2 && !once)
    ? static_cast<std::size_t>(std::atoi(argv[2])) : 3;

  turnloop::loop loop(cfg);
  tcp::acceptor acceptor(loop, {net::ip::address_v4::loopback(), port});
  net::co_spawn(loop, listen(acceptor), net::detached);

  if (!once)
  {
    std::cout << "echo server on " << acceptor.local_endpoint()
      << ", at most " << cfg.max_handles << " connections\n";
    net::signal_set signals(loop, SIGINT, SIGTERM);
    signals.async_wait([&](auto, int) { loop.stop(); });
    loop.run();
    return 0;
  }

  constexpr int clients = 10;
  int done = 0;
  int echoed = 0;
  for (int id = 0; id < clients; ++id)
  {
    net::co_spawn(loop, client(acceptor.local_endpoint(), id),
        [&](std::exception_ptr e, bool ok) {
          echoed += !e && ok;
          if (++done == clients)
            loop.stop();
        });
  }
  loop.run();

  const turnloop::handle_stats stats = turnloop::handle_statistics(loop);
  std::cout << echoed << " of " << clients << " clients echoed; at most "
    << stats.high_water << " connections open (cap " << stats.limit << "); "
    << stats.accept_waits << " accepts waited for a connection to close\n";
  const bool ok = echoed == clients && stats.high_water <= cfg.max_handles
    && stats.accept_waits > 0;
  return ok ? 0 : 1;
}
