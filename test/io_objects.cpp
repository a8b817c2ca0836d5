//
// test/io_objects.cpp
//
// turnloop/io_objects.hpp: each name is Asio's own class template with the
// loop's executor (or, through io_objects<E>, any executor's), and each
// object's completions run on the loop's thread, inside its run(). The same
// code, written once over io_objects<Context::executor_type>, runs on
// io_context too.
//

#include <turnloop/io_objects.hpp>

#define BOOST_TEST_MODULE io_objects
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <csignal>
#include <string>
#include <type_traits>

#if !defined(_WIN32)
# include <unistd.h>
#endif // !defined(_WIN32)

using turnloop::error_code;
using executor = turnloop::loop::executor_type;
using namespace std::chrono_literals;

// Asio's templates, with the loop's executor.
static_assert(std::is_same_v<turnloop::steady_timer,
    asio::basic_waitable_timer<std::chrono::steady_clock,
      asio::wait_traits<std::chrono::steady_clock>, executor>>);
static_assert(std::is_same_v<turnloop::system_timer,
    asio::basic_waitable_timer<std::chrono::system_clock,
      asio::wait_traits<std::chrono::system_clock>, executor>>);
static_assert(std::is_same_v<turnloop::signal_set,
    asio::basic_signal_set<executor>>);
static_assert(std::is_same_v<turnloop::ip::tcp::socket,
    asio::basic_stream_socket<asio::ip::tcp, executor>>);
static_assert(std::is_same_v<turnloop::ip::tcp::acceptor,
    asio::basic_socket_acceptor<asio::ip::tcp, executor>>);
static_assert(std::is_same_v<turnloop::ip::tcp::resolver,
    asio::ip::basic_resolver<asio::ip::tcp, executor>>);
static_assert(std::is_same_v<turnloop::ip::tcp::endpoint,
    asio::ip::tcp::endpoint>);
static_assert(std::is_same_v<turnloop::ip::udp::socket,
    asio::basic_datagram_socket<asio::ip::udp, executor>>);
static_assert(std::is_same_v<turnloop::ip::udp::resolver,
    asio::ip::basic_resolver<asio::ip::udp, executor>>);
#if !defined(_WIN32)
static_assert(std::is_same_v<turnloop::local::stream_protocol::socket,
    asio::basic_stream_socket<asio::local::stream_protocol, executor>>);
static_assert(std::is_same_v<turnloop::local::stream_protocol::acceptor,
    asio::basic_socket_acceptor<asio::local::stream_protocol, executor>>);
static_assert(std::is_same_v<turnloop::local::datagram_protocol::socket,
    asio::basic_datagram_socket<asio::local::datagram_protocol, executor>>);
static_assert(std::is_same_v<turnloop::posix::stream_descriptor,
    asio::posix::basic_stream_descriptor<executor>>);
#endif // !defined(_WIN32)
static_assert(std::is_same_v<turnloop::awaitable<int>,
    asio::awaitable<int, executor>>);
static_assert(std::is_same_v<turnloop::use_awaitable_t,
    asio::use_awaitable_t<executor>>);
// ... and through io_objects, io_context's.
using io_context_objects =
  turnloop::io_objects<asio::io_context::executor_type>;
static_assert(std::is_same_v<io_context_objects::ip::tcp::socket,
    asio::basic_stream_socket<asio::ip::tcp, asio::io_context::executor_type>>);

namespace {

// Where a completion ran: on the context's thread, inside its run().
template <typename Context>
struct sightings
{
  Context& ctx;
  bool in_run = false;
  int seen = 0;
  int on_thread = 0;

  void saw()
  {
    ++seen;
    if (in_run && ctx.get_executor().running_in_this_thread())
      ++on_thread;
  }

  void run()
  {
    in_run = true;
    ctx.restart();
    ctx.run();
    in_run = false;
  }
};

// Library code written once: every object typed on Context's executor.
template <typename Context>
int exercise_every_object(Context& ctx)
{
  using objects = turnloop::io_objects<typename Context::executor_type>;
  sightings<Context> s{ctx};

  typename objects::steady_timer steady(ctx, 0ms);
  steady.async_wait([&](error_code ec) { BOOST_TEST(!ec); s.saw(); });
  typename objects::system_timer system(ctx, 0ms);
  system.async_wait([&](error_code ec) { BOOST_TEST(!ec); s.saw(); });

  using tcp = typename objects::ip::tcp;
  typename tcp::acceptor acceptor(ctx,
      typename tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  typename tcp::socket server(ctx);
  typename tcp::socket client(ctx);
  static char tcp_byte[1];
  acceptor.async_accept(server, [&](error_code ec) {
    BOOST_TEST(!ec);
    s.saw();
    asio::async_read(server, asio::buffer(tcp_byte),
        [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  });
  client.async_connect(acceptor.local_endpoint(), [&](error_code ec) {
    BOOST_TEST(!ec);
    s.saw();
    asio::async_write(client, asio::buffer("t", 1),
        [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  });

  typename tcp::resolver resolver(ctx);
  resolver.async_resolve("127.0.0.1", "80",
      [&](error_code ec, typename tcp::resolver::results_type r) {
        BOOST_TEST(!ec);
        BOOST_TEST(!r.empty());
        s.saw();
      });

  using udp = typename objects::ip::udp;
  typename udp::socket receiver(ctx,
      typename udp::endpoint(asio::ip::address_v4::loopback(), 0));
  typename udp::socket sender(ctx, udp::v4());
  static char udp_byte[1];
  receiver.async_receive(asio::buffer(udp_byte),
      [&](error_code ec, std::size_t n) { BOOST_TEST(!ec); BOOST_TEST(n == 1u); s.saw(); });
  sender.send_to(asio::buffer("u", 1), receiver.local_endpoint());

  // Local sockets and pipes: POSIX's (Asio makes no socketpair on Windows,
  // and has no POSIX descriptors there).
#if !defined(_WIN32)
  typename objects::local::stream_protocol::socket local_a(ctx), local_b(ctx);
  asio::local::connect_pair(local_a, local_b);
  static char local_byte[1];
  asio::async_read(local_a, asio::buffer(local_byte),
      [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  asio::write(local_b, asio::buffer("l", 1));

  typename objects::local::datagram_protocol::socket dgram_a(ctx), dgram_b(ctx);
  asio::local::connect_pair(dgram_a, dgram_b);
  static char dgram_byte[1];
  dgram_a.async_receive(asio::buffer(dgram_byte),
      [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  dgram_b.send(asio::buffer("d", 1));

  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  typename objects::posix::stream_descriptor pipe_in(ctx, fds[0]);
  typename objects::posix::stream_descriptor pipe_out(ctx, fds[1]);
  static char pipe_byte[1];
  asio::async_read(pipe_in, asio::buffer(pipe_byte),
      [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  asio::write(pipe_out, asio::buffer("p", 1));
  const int signal_number = SIGUSR1;
#else // !defined(_WIN32)
  const int signal_number = SIGTERM; // Windows' C library raises no SIGUSR1
#endif // !defined(_WIN32)

  typename objects::signal_set signals(ctx, signal_number);
  signals.async_wait([&](error_code ec, int n) {
    BOOST_TEST(!ec);
    BOOST_TEST(n == signal_number);
    s.saw();
  });
  std::raise(signal_number);

  // A coroutine on the context's executor, awaiting with its token.
  asio::co_spawn(ctx, [&]() -> typename objects::template awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    static_assert(std::is_same_v<decltype(ex), typename Context::executor_type>);
    typename objects::steady_timer t(ex, 1ms);
    co_await t.async_wait(objects::use_awaitable);
    s.saw();
  }, asio::detached);

  s.run();
  BOOST_TEST(s.on_thread == s.seen);
  return s.seen;
}

#if defined(_WIN32)
constexpr int completions = 10; // no local sockets or pipe
#else // defined(_WIN32)
constexpr int completions = 13;
#endif // defined(_WIN32)

} // namespace

BOOST_AUTO_TEST_CASE(every_object_typed_on_the_loops_executor_completes_on_its_thread)
{
  turnloop::loop l;
  BOOST_TEST(exercise_every_object(l) == completions);
}

BOOST_AUTO_TEST_CASE(the_same_code_runs_on_io_context_typed_on_its_executor)
{
  asio::io_context ioc;
  BOOST_TEST(exercise_every_object(ioc) == completions);
}

BOOST_AUTO_TEST_CASE(the_loops_names_are_io_objects_of_its_executor)
{
  static_assert(std::is_same_v<turnloop::loop_objects,
      turnloop::io_objects<turnloop::loop::executor_type>>);
  static_assert(std::is_same_v<turnloop::ip::tcp,
      turnloop::loop_objects::ip::tcp>);
  BOOST_TEST((turnloop::ip::tcp::v4() == asio::ip::tcp::v4()));
  BOOST_TEST((turnloop::ip::udp::v6() == asio::ip::udp::v6()));
}
