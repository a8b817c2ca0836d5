//
// example/drop_in.cpp
//
// A stock Asio program — timers, a strand, a TCP exchange, a coroutine and a
// helper written against io_context& — where the only change for turnloop is
// the type of the context:
//
//   -  boost::asio::io_context ctx;
//   +  turnloop::loop ctx;
//
// Runs to completion and prints what happened.
//

#include <turnloop.hpp>

#include <turnloop/asio.hpp>

#include <iostream>

namespace net = turnloop::asio; // Boost.Asio, or standalone Asio
using net::ip::tcp;
using namespace std::chrono_literals;

// Library-style code that only knows io_context.
void start_heartbeat(net::io_context& ctx, net::steady_timer& timer, int& beats)
{
  timer.expires_after(2ms);
  timer.async_wait([&](turnloop::error_code ec) {
    if (!ec && ++beats < 5)
      start_heartbeat(ctx, timer, beats);
  });
}

net::awaitable<std::string> ask(tcp::endpoint server)
{
  tcp::socket socket(co_await net::this_coro::executor);
  co_await socket.async_connect(server, net::use_awaitable);
  co_await net::async_write(socket, net::buffer("ping\n", 5),
      net::use_awaitable);
  net::streambuf reply;
  co_await net::async_read_until(socket, reply, '\n', net::use_awaitable);
  co_return std::string(net::buffers_begin(reply.data()),
      net::buffers_end(reply.data()) - 1);
}

int main()
{
  turnloop::loop ctx; // was: boost::asio::io_context ctx;

  int beats = 0;
  net::steady_timer timer(ctx);
  start_heartbeat(ctx, timer, beats);

  auto strand = net::make_strand(ctx);
  int counted = 0;
  for (int i = 0; i < 1000; ++i)
    net::post(strand, [&] { ++counted; });

  tcp::acceptor acceptor(ctx, {net::ip::address_v4::loopback(), 0});
  tcp::socket server(ctx);
  net::streambuf request;
  acceptor.async_accept(server, [&](turnloop::error_code ec) {
    if (ec)
      return;
    net::async_read_until(server, request, '\n',
        [&](turnloop::error_code ec, std::size_t) {
          if (!ec)
            net::async_write(server, net::buffer("pong\n", 5), net::detached);
        });
  });

  std::string answer;
  net::co_spawn(ctx, ask(acceptor.local_endpoint()),
      [&](std::exception_ptr, std::string reply) { answer = reply; });

  ctx.run();

  std::cout << "heartbeats: " << beats << "\n"
            << "strand handlers: " << counted << "\n"
            << "answer: " << answer << "\n";
  return (beats == 5 && counted == 1000 && answer == "pong") ? 0 : 1;
}
