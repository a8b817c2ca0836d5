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

#include <boost/asio.hpp>

#include <iostream>

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;

// Library-style code that only knows io_context.
void start_heartbeat(asio::io_context& ctx, asio::steady_timer& timer, int& beats)
{
  timer.expires_after(2ms);
  timer.async_wait([&](boost::system::error_code ec) {
    if (!ec && ++beats < 5)
      start_heartbeat(ctx, timer, beats);
  });
}

asio::awaitable<std::string> ask(tcp::endpoint server)
{
  tcp::socket socket(co_await asio::this_coro::executor);
  co_await socket.async_connect(server, asio::use_awaitable);
  co_await asio::async_write(socket, asio::buffer("ping\n", 5),
      asio::use_awaitable);
  asio::streambuf reply;
  co_await asio::async_read_until(socket, reply, '\n', asio::use_awaitable);
  co_return std::string(asio::buffers_begin(reply.data()),
      asio::buffers_end(reply.data()) - 1);
}

int main()
{
  turnloop::loop ctx; // was: boost::asio::io_context ctx;

  int beats = 0;
  asio::steady_timer timer(ctx);
  start_heartbeat(ctx, timer, beats);

  auto strand = asio::make_strand(ctx);
  int counted = 0;
  for (int i = 0; i < 1000; ++i)
    asio::post(strand, [&] { ++counted; });

  tcp::acceptor acceptor(ctx, {asio::ip::address_v4::loopback(), 0});
  tcp::socket server(ctx);
  asio::streambuf request;
  acceptor.async_accept(server, [&](boost::system::error_code ec) {
    if (ec)
      return;
    asio::async_read_until(server, request, '\n',
        [&](boost::system::error_code ec, std::size_t) {
          if (!ec)
            asio::async_write(server, asio::buffer("pong\n", 5), asio::detached);
        });
  });

  std::string answer;
  asio::co_spawn(ctx, ask(acceptor.local_endpoint()),
      [&](std::exception_ptr, std::string reply) { answer = reply; });

  ctx.run();

  std::cout << "heartbeats: " << beats << "\n"
            << "strand handlers: " << counted << "\n"
            << "answer: " << answer << "\n";
  return (beats == 5 && counted == 1000 && answer == "pong") ? 0 : 1;
}
