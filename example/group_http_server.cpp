//
// example/group_http_server.cpp
//
// A Beast HTTP/1.1 keep-alive server moved from `io_context` run on N
// threads to a turnloop::loop_group: one loop per thread, one acceptor
// (turnloop::group_acceptor) that deals each connection to the loop with
// the fewest live connections, and every connection served from start to
// end by that loop. (
// turnloop::sharded_acceptor, one SO_REUSEPORT acceptor per loop, is the
// other way; doc/loop_group.md compares them.) doc/loop_group.md walks
// through the changes; the lines that differ from the io_context version
// are marked "loop_group:".
//
//   group_http_server [port [threads]]   serve until interrupted
//                                        (default 8080, one per core)
//   group_http_server --once             serve on a free port with two
//                                        loops, run 8 keep-alive clients of
//                                        50 requests each against it, check
//                                        every response, and exit (0 on
//                                        success)
//

#include <turnloop.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;

// Connections served by each loop; each counter is written by one loop.
std::vector<std::unique_ptr<std::atomic<long>>> served_by;

// Answers requests on one connection until the client closes it. Nothing
// here is shared with another loop: the socket, its buffer and the
// coroutine all belong to the loop the connection was dealt to.
awaitable<void> session(turnloop::accepted_socket<tcp> socket,
    std::atomic<long>& served)
{
  ++served;
  beast::flat_buffer buffer;
  for (;;)
  {
    http::request<http::string_body> request;
    auto [ec, n] = co_await http::async_read(socket, buffer, request,
        asio::as_tuple(use_awaitable));
    if (ec)
      co_return;
    http::response<http::string_body> response{http::status::ok,
      request.version()};
    response.set(http::field::server, "turnloop");
    response.set(http::field::content_type, "text/plain");
    response.keep_alive(request.keep_alive());
    response.body() = "hello from turnloop\n";
    response.prepare_payload();
    auto [wec, wn] = co_await http::async_write(socket, response,
        asio::as_tuple(use_awaitable));
    if (wec || !response.keep_alive())
      co_return;
  }
}

// loop_group: one accept loop, on the accepting loop; each socket is built
// on the loop with the fewest live connections, and its session spawned
// there (was
// `co_spawn(acceptor.get_executor(), ...)`).
awaitable<void> listen(turnloop::loop_group& group,
    turnloop::group_acceptor<>& acceptor)
{
  for (;;)
  {
    auto [ec, socket] = co_await acceptor.async_accept(
        asio::as_tuple(use_awaitable));
    if (ec == asio::error::operation_aborted)
      co_return;
    if (ec)
      continue;
    auto ex = socket.get_executor();
    std::size_t i = 0;
    while (&asio::query(ex, asio::execution::context)
        != static_cast<asio::execution_context*>(&group.loop(i)))
      ++i;
    asio::co_spawn(ex, session(std::move(socket), *served_by[i]),
        asio::detached);
  }
}

// One keep-alive client, synchronous, on its own thread: @p requests
// requests, each response checked.
bool client(const tcp::endpoint& to, int requests)
{
  asio::io_context ctx;
  tcp::socket socket(ctx);
  boost::system::error_code ec;
  socket.connect(to, ec);
  if (ec)
    return false;
  beast::flat_buffer buffer;
  for (int i = 0; i < requests; ++i)
  {
    http::request<http::empty_body> request{http::verb::get, "/", 11};
    request.set(http::field::host, "localhost");
    http::write(socket, request, ec);
    if (ec)
      return false;
    http::response<http::string_body> response;
    http::read(socket, buffer, response, ec);
    if (ec || response.result() != http::status::ok
        || response.body() != "hello from turnloop\n")
      return false;
  }
  return true;
}

int main(int argc, char* argv[])
{
  const bool once = argc > 1 && std::string(argv[1]) == "--once";
  const unsigned short port = (argc > 1 && !once)
    ? static_cast<unsigned short>(std::atoi(argv[1])) : (once ? 0 : 8080);
  const std::size_t threads = (argc > 2 && !once)
    ? static_cast<std::size_t>(std::atoi(argv[2]))
    : (once ? 2 : turnloop::loop_group::default_size());

  // loop_group: was `asio::io_context ioc{threads};`.
  turnloop::loop_group group(threads);
  // loop_group: was `tcp::acceptor acceptor{ioc, endpoint};`.
  turnloop::group_acceptor<> acceptor(group,
      {asio::ip::address_v4::loopback(), port});
  for (std::size_t i = 0; i < group.size(); ++i)
    served_by.push_back(std::make_unique<std::atomic<long>>(0));
  asio::co_spawn(group.loop(acceptor.accepting_loop()),
      listen(group, acceptor), asio::detached);

  if (!once)
  {
    // The signal set lives on one loop; stop() ends every loop.
    asio::signal_set signals(group.loop(0), SIGINT, SIGTERM);
    signals.async_wait([&](auto, int) { group.stop(); });
    std::cout << "serving on " << acceptor.local_endpoint() << " with "
              << group.size() << " loops\n";
    // loop_group: was N-1 threads plus this one, each calling ioc.run().
    group.run();
    return 0;
  }

  group.start();
  const tcp::endpoint to = acceptor.local_endpoint();
  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c)
    clients.emplace_back([&] {
      if (client(to, 50))
        ++good;
    });
  for (auto& t : clients)
    t.join();
  group.stop();
  group.join();

  long total = 0;
  for (std::size_t i = 0; i < group.size(); ++i)
  {
    std::cout << "loop " << i << " served " << served_by[i]->load()
              << " connections\n";
    total += served_by[i]->load();
  }
  std::cout << good.load() << " of 8 clients got 50 good responses each\n";
  // Dealt to the loop with the fewest live connections: how many each loop
  // got depends on when the clients finished, but every loop served some.
  bool spread = true;
  for (auto& n : served_by)
    spread = spread && n->load() > 0;
  return (good.load() == 8 && total == 8 && spread) ? 0 : 1;
}
