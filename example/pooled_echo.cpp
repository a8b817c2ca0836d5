//
// example/pooled_echo.cpp
//
// A coroutine echo server whose idle connections hold no read buffer. Each
// session waits with turnloop::async_read_pooled, which takes a buffer from
// the loop's pool only once data has arrived, writes the bytes back from
// that same buffer, and lets go of it before it waits again.
//
//   pooled_echo [port]    serve until interrupted (default port 5556)
//   pooled_echo --once    serve on a free port, open 500 client connections
//                         and leave them idle, check that the pool has lent
//                         no buffer, echo a message through each, and exit
//                         (0 on success)
//

#include <turnloop.hpp>

#include <turnloop/asio.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace net = turnloop::asio; // Boost.Asio, or standalone Asio
using net::awaitable;
using net::use_awaitable;
using net::ip::tcp;

awaitable<void> session(tcp::socket socket)
{
  for (;;)
  {
    // Waits holding no buffer; the lease holds one from here...
    auto [ec, lease] = co_await turnloop::async_read_pooled(socket,
        net::as_tuple(use_awaitable));
    if (ec)
      co_return; // end of stream or error: the session ends
    // ...to here: written back (through the loop's io_uring when
    // config::pooled_io asks for one) and returned to the pool once written.
    co_await turnloop::async_write_lease(socket, std::move(lease),
        use_awaitable);
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

// The self-test: many idle connections cost the pool nothing, and every one
// of them still echoes.
awaitable<bool> clients(tcp::endpoint server, turnloop::buffer_pool& pool,
    std::size_t count)
{
  auto executor = co_await net::this_coro::executor;
  std::vector<tcp::socket> sockets;
  sockets.reserve(count);
  for (std::size_t i = 0; i != count; ++i)
    co_await sockets.emplace_back(executor).async_connect(server,
        use_awaitable);

  // Let every session reach its read, then look at the pool.
  net::steady_timer settle(executor, std::chrono::milliseconds(50));
  co_await settle.async_wait(use_awaitable);
  const turnloop::buffer_pool_stats idle = pool.stats();
  std::cout << count << " idle connections: " << idle.minted
    << " buffers minted, " << idle.leased << " leased\n";
  if (idle.minted != 0 || idle.leased != 0)
    co_return false;

  for (std::size_t i = 0; i != count; ++i)
  {
    const std::string message = "hello from client " + std::to_string(i);
    co_await net::async_write(sockets[i], net::buffer(message),
        use_awaitable);
    std::string reply(message.size(), '\0');
    co_await net::async_read(sockets[i], net::buffer(reply), use_awaitable);
    if (reply != message)
      co_return false;
  }
  // A session gives its lease back when its write completes, which the
  // client may see after it has read the echo (on Windows the completion
  // comes through the port): wait for the last one, for at most 5 s.
  const auto deadline = std::chrono::steady_clock::now()
    + std::chrono::seconds(5);
  while (pool.stats().leased != 0
      && std::chrono::steady_clock::now() < deadline)
  {
    settle.expires_after(std::chrono::milliseconds(1));
    co_await settle.async_wait(use_awaitable);
  }
  const turnloop::buffer_pool_stats busy = pool.stats();
  std::cout << "echoed through each: " << busy.minted
    << " buffers minted (at most " << busy.leased_high_water
    << " in use at once), " << busy.leased << " leased now\n";
  co_return busy.leased == 0;
}

int main(int argc, char* argv[])
{
  const bool once = argc > 1 && std::string(argv[1]) == "--once";
  const unsigned short port = (argc > 1 && !once)
    ? static_cast<unsigned short>(std::atoi(argv[1])) : (once ? 0 : 5556);

  // 4 KiB buffers, at most 256 of them: 1 MiB however many connections are
  // idle. Every pending read is one of max_operations, so that bounds the
  // number of connections waiting at once.
  turnloop::config config;
  config.pooled_buffers = 256;
  config.pooled_buffer_size = 4096;
  config.max_operations = 65536;
  config.pooled_io = turnloop::io_path::automatic; // io_uring where allowed
  turnloop::loop loop(config);
  turnloop::buffer_pool& pool =
    net::use_service<turnloop::buffer_pool>(loop);

  tcp::acceptor acceptor(loop, {net::ip::address_v4::loopback(), port});
  net::co_spawn(loop, listen(acceptor), net::detached);

  if (!once)
  {
    std::cout << "pooled echo server on " << acceptor.local_endpoint() << "\n";
    net::signal_set signals(loop, SIGINT, SIGTERM);
    signals.async_wait([&](auto, int) { loop.stop(); });
    loop.run();
    return 0;
  }

  bool ok = false;
  net::co_spawn(loop, clients(acceptor.local_endpoint(), pool, 500),
      [&](std::exception_ptr e, bool echoed) {
        ok = !e && echoed;
        loop.stop();
      });
  loop.run();
  std::cout << (ok ? "ok\n" : "failed\n");
  return ok ? 0 : 1;
}
