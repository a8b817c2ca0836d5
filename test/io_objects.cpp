//
// test/io_objects.cpp
//
// turnloop/io_objects.hpp: each name is Asio's own class template with the
// loop's executor (or, through io_objects<E>, any executor's), and each
// object's completions run in the loop's turns: on its thread, inside its
// run(). Driven through its io_context base, the loop's scheduler runs them
// where it runs any operation, on the thread calling io_context::run(), as
// io_context runs its own objects' (detail/loop_handler_work.hpp). The same
// code, written once over io_objects_for<Context>, runs on io_context too.
// Then what typing saves: the completion calls the handler in place and
// holds no unit of the loop's work (Asio's handler_work), unless the
// handler's own executor is another loop's.
//

#include <turnloop/io_objects.hpp>

#define BOOST_TEST_MODULE io_objects
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <csignal>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>

#if !defined(_WIN32)
# include <unistd.h>
#endif // !defined(_WIN32)

#include "support.hpp"

using turnloop::error_code;
using executor = turnloop::loop::executor_type;
using io_context_executor = asio::io_context::executor_type;
using namespace std::chrono_literals;

namespace {

// The ways a test runs its context: a loop's own run(), a loop driven
// through io_context::run() (its io_context base), and io_context.
// in_turn(c): the calling thread is where the way runs completions.
struct loop_run
{
  using context = turnloop::loop;
  static void run(context& c) { c.run(); }
  static bool in_turn(context& c)
  {
    return c.get_executor().running_in_this_thread();
  }
};

struct loop_through_io_context
{
  using context = turnloop::loop;
  static void run(context& c) { static_cast<asio::io_context&>(c).run(); }
  static bool in_turn(context& c)
  {
    return static_cast<asio::io_context&>(c).get_executor()
      .running_in_this_thread();
  }
};

struct io_context_run
{
  using context = asio::io_context;
  static void run(context& c) { c.run(); }
  static bool in_turn(context& c)
  {
    return c.get_executor().running_in_this_thread();
  }
};

using ways = std::tuple<loop_run, loop_through_io_context, io_context_run>;

// Where the completions ran: each must run on the thread running the
// context, inside the run() below (for a loop's own run(): in a turn, the
// only place where its executor's running_in_this_thread() is true).
template <typename Way>
struct sightings
{
  using context = typename Way::context;
  using objects = turnloop::io_objects_for<context>;

  context ctx;
  bool in_run = false;
  int seen = 0;
  int in_turn = 0;

  void saw()
  {
    ++seen;
    if (in_run && Way::in_turn(ctx))
      ++in_turn;
  }

  // Runs the context; true if every completion was seen in a turn.
  bool run(int expected)
  {
    in_run = true;
    Way::run(ctx);
    in_run = false;
    BOOST_TEST(seen == expected);
    BOOST_TEST(in_turn == seen);
    return seen == expected && in_turn == seen;
  }
};

template <typename Object, typename Context>
void check_executor(Object& object, Context& ctx)
{
  static_assert(std::is_same_v<typename Object::executor_type,
      typename Context::executor_type>);
  BOOST_TEST((object.get_executor() == ctx.get_executor()));
}

} // namespace

// Asio's templates, with the loop's executor.
static_assert(std::is_same_v<turnloop::io_objects_for<turnloop::loop>,
    turnloop::io_objects<executor>>);
static_assert(std::is_same_v<turnloop::loop_objects,
    turnloop::io_objects<executor>>);
static_assert(std::is_same_v<turnloop::io_objects_for<asio::io_context>,
    turnloop::io_objects<io_context_executor>>);

BOOST_AUTO_TEST_CASE_TEMPLATE(steady_timer_is_asios_on_the_loops_executor_and_completes_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::steady_timer,
      asio::basic_waitable_timer<std::chrono::steady_clock,
        asio::wait_traits<std::chrono::steady_clock>, executor>>);
  sightings<Way> s;
  typename decltype(s)::objects::steady_timer timer(s.ctx, 0ms);
  check_executor(timer, s.ctx);
  timer.async_wait([&](error_code ec) { BOOST_TEST(!ec); s.saw(); });
  s.run(1);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(system_timer_is_asios_on_the_loops_executor_and_completes_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::system_timer,
      asio::basic_waitable_timer<std::chrono::system_clock,
        asio::wait_traits<std::chrono::system_clock>, executor>>);
  sightings<Way> s;
  typename decltype(s)::objects::system_timer timer(s.ctx, 0ms);
  check_executor(timer, s.ctx);
  timer.async_wait([&](error_code ec) { BOOST_TEST(!ec); s.saw(); });
  s.run(1);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(high_resolution_timer_is_asios_on_the_loops_executor_and_completes_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::high_resolution_timer,
      asio::basic_waitable_timer<std::chrono::high_resolution_clock,
        asio::wait_traits<std::chrono::high_resolution_clock>, executor>>);
  sightings<Way> s;
  typename decltype(s)::objects::high_resolution_timer timer(s.ctx, 0ms);
  check_executor(timer, s.ctx);
  timer.async_wait([&](error_code ec) { BOOST_TEST(!ec); s.saw(); });
  s.run(1);
}

#if defined(_WIN32)
constexpr int signal_number = SIGTERM; // Windows' C library raises no SIGUSR1
#else // defined(_WIN32)
constexpr int signal_number = SIGUSR1;
#endif // defined(_WIN32)

BOOST_AUTO_TEST_CASE_TEMPLATE(signal_set_is_asios_on_the_loops_executor_and_completes_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::signal_set,
      asio::basic_signal_set<executor>>);
  sightings<Way> s;
  typename decltype(s)::objects::signal_set signals(s.ctx, signal_number);
  check_executor(signals, s.ctx);
  signals.async_wait([&](error_code ec, int n) {
    BOOST_TEST(!ec);
    BOOST_TEST(n == signal_number);
    s.saw();
  });
  std::raise(signal_number);
  s.run(1);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(tcp_acceptor_and_socket_are_asios_on_the_loops_executor_and_complete_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::ip::tcp::socket,
      asio::basic_stream_socket<asio::ip::tcp, executor>>);
  static_assert(std::is_same_v<turnloop::ip::tcp::acceptor,
      asio::basic_socket_acceptor<asio::ip::tcp, executor>>);
  static_assert(std::is_same_v<turnloop::ip::tcp::endpoint,
      asio::ip::tcp::endpoint>);
  static_assert(std::is_same_v<turnloop::ip::tcp::protocol_type,
      asio::ip::tcp>);
  BOOST_TEST((turnloop::ip::tcp::v4() == asio::ip::tcp::v4()));
  BOOST_TEST((turnloop::ip::tcp::v6() == asio::ip::tcp::v6()));

  sightings<Way> s;
  using tcp = typename decltype(s)::objects::ip::tcp;
  typename tcp::acceptor acceptor(s.ctx,
      typename tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  typename tcp::socket server(s.ctx);
  typename tcp::socket client(s.ctx);
  check_executor(acceptor, s.ctx);
  check_executor(client, s.ctx);
  char byte[1];
  acceptor.async_accept(server, [&](error_code ec) {
    BOOST_TEST(!ec);
    s.saw();
    asio::async_read(server, asio::buffer(byte),
        [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  });
  client.async_connect(acceptor.local_endpoint(), [&](error_code ec) {
    BOOST_TEST(!ec);
    s.saw();
    asio::async_write(client, asio::buffer("t", 1),
        [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  });
  s.run(4);
  BOOST_TEST(byte[0] == 't');
}

BOOST_AUTO_TEST_CASE_TEMPLATE(tcp_resolver_is_asios_on_the_loops_executor_and_completes_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::ip::tcp::resolver,
      asio::ip::basic_resolver<asio::ip::tcp, executor>>);
  sightings<Way> s;
  typename decltype(s)::objects::ip::tcp::resolver resolver(s.ctx);
  check_executor(resolver, s.ctx);
  resolver.async_resolve("127.0.0.1", "80",
      [&](error_code ec, auto results) {
        BOOST_TEST(!ec);
        BOOST_TEST(!results.empty());
        s.saw();
      });
  s.run(1);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(udp_socket_is_asios_on_the_loops_executor_and_completes_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::ip::udp::socket,
      asio::basic_datagram_socket<asio::ip::udp, executor>>);
  static_assert(std::is_same_v<turnloop::ip::udp::endpoint,
      asio::ip::udp::endpoint>);
  BOOST_TEST((turnloop::ip::udp::v6() == asio::ip::udp::v6()));

  sightings<Way> s;
  using udp = typename decltype(s)::objects::ip::udp;
  typename udp::socket receiver(s.ctx,
      typename udp::endpoint(asio::ip::address_v4::loopback(), 0));
  typename udp::socket sender(s.ctx, udp::v4());
  check_executor(receiver, s.ctx);
  char byte[1];
  receiver.async_receive(asio::buffer(byte), [&](error_code ec, std::size_t n) {
    BOOST_TEST(!ec);
    BOOST_TEST(n == 1u);
    s.saw();
  });
  sender.async_send_to(asio::buffer("u", 1), receiver.local_endpoint(),
      [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  s.run(2);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(udp_resolver_is_asios_on_the_loops_executor_and_completes_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::ip::udp::resolver,
      asio::ip::basic_resolver<asio::ip::udp, executor>>);
  sightings<Way> s;
  typename decltype(s)::objects::ip::udp::resolver resolver(s.ctx);
  check_executor(resolver, s.ctx);
  resolver.async_resolve("127.0.0.1", "53",
      [&](error_code ec, auto results) {
        BOOST_TEST(!ec);
        BOOST_TEST(!results.empty());
        s.saw();
      });
  s.run(1);
}

// Local sockets and pipes: POSIX's (Asio makes no socketpair on Windows,
// and has no POSIX descriptors there).
#if defined(_WIN32)
BOOST_AUTO_TEST_CASE(local_sockets_and_posix_descriptors,
    * test::only_where(false, "local sockets and POSIX stream descriptors "
      "are POSIX's (Asio has no socketpair or posix::stream_descriptor on "
      "Windows)"))
{
}
#else // defined(_WIN32)
BOOST_AUTO_TEST_CASE_TEMPLATE(local_stream_socket_and_acceptor_are_asios_on_the_loops_executor_and_complete_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::local::stream_protocol::socket,
      asio::basic_stream_socket<asio::local::stream_protocol, executor>>);
  static_assert(std::is_same_v<turnloop::local::stream_protocol::acceptor,
      asio::basic_socket_acceptor<asio::local::stream_protocol, executor>>);
  static_assert(std::is_same_v<turnloop::local::stream_protocol::endpoint,
      asio::local::stream_protocol::endpoint>);

  sightings<Way> s;
  using local = typename decltype(s)::objects::local::stream_protocol;
  // An abstract socket name: nothing in the file system to clean up.
  const std::string name = std::string(1, '\0') + "turnloop-io-objects-"
    + std::to_string(::getpid());
  typename local::acceptor acceptor(s.ctx, typename local::endpoint(name));
  typename local::socket server(s.ctx), client(s.ctx);
  check_executor(acceptor, s.ctx);
  check_executor(client, s.ctx);
  char byte[1];
  acceptor.async_accept(server, [&](error_code ec) {
    BOOST_TEST(!ec);
    s.saw();
    asio::async_read(server, asio::buffer(byte),
        [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  });
  client.async_connect(acceptor.local_endpoint(), [&](error_code ec) {
    BOOST_TEST(!ec);
    s.saw();
    asio::async_write(client, asio::buffer("l", 1),
        [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  });
  s.run(4);
  BOOST_TEST(byte[0] == 'l');
}

BOOST_AUTO_TEST_CASE_TEMPLATE(local_datagram_socket_is_asios_on_the_loops_executor_and_completes_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::local::datagram_protocol::socket,
      asio::basic_datagram_socket<asio::local::datagram_protocol, executor>>);
  sightings<Way> s;
  typename decltype(s)::objects::local::datagram_protocol::socket a(s.ctx),
    b(s.ctx);
  asio::local::connect_pair(a, b);
  check_executor(a, s.ctx);
  char byte[1];
  a.async_receive(asio::buffer(byte),
      [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  b.async_send(asio::buffer("d", 1),
      [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  s.run(2);
  BOOST_TEST(byte[0] == 'd');
}

BOOST_AUTO_TEST_CASE_TEMPLATE(posix_stream_descriptor_is_asios_on_the_loops_executor_and_completes_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::posix::stream_descriptor,
      asio::posix::basic_stream_descriptor<executor>>);
  sightings<Way> s;
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  typename decltype(s)::objects::posix::stream_descriptor in(s.ctx, fds[0]);
  typename decltype(s)::objects::posix::stream_descriptor out(s.ctx, fds[1]);
  check_executor(in, s.ctx);
  char byte[1];
  asio::async_read(in, asio::buffer(byte),
      [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  asio::async_write(out, asio::buffer("p", 1),
      [&](error_code ec, std::size_t) { BOOST_TEST(!ec); s.saw(); });
  s.run(2);
  BOOST_TEST(byte[0] == 'p');
}

#endif // defined(_WIN32)

BOOST_AUTO_TEST_CASE_TEMPLATE(awaitable_and_use_awaitable_are_asios_on_the_loops_executor_and_resume_in_its_turns,
    Way, ways)
{
  static_assert(std::is_same_v<turnloop::awaitable<int>,
      asio::awaitable<int, executor>>);
  static_assert(std::is_same_v<turnloop::awaitable<>,
      asio::awaitable<void, executor>>);
  static_assert(std::is_same_v<turnloop::use_awaitable_t,
      asio::use_awaitable_t<executor>>);
  static_assert(std::is_same_v<std::decay_t<decltype(turnloop::use_awaitable)>,
      turnloop::use_awaitable_t>);

  sightings<Way> s;
  using objects = typename decltype(s)::objects;
  using context_executor = typename Way::context::executor_type;
  asio::co_spawn(s.ctx, [&]() -> typename objects::template awaitable<int> {
    // this_coro::executor is the context's own, which the objects take.
    auto ex = co_await asio::this_coro::executor;
    static_assert(std::is_same_v<decltype(ex), context_executor>);
    typename objects::steady_timer timer(ex, 0ms);
    co_await timer.async_wait(objects::use_awaitable);
    s.saw();
    // The object whose operations are awaitable without a token.
    typename objects::use_awaitable_t::template as_default_on_t<
      typename objects::steady_timer> awaited(ex, 0ms);
    co_await awaited.async_wait();
    s.saw();
    co_return 7;
  }, [&](std::exception_ptr e, int value) {
    BOOST_TEST(!e);
    BOOST_TEST(value == 7);
    s.saw();
  });
  s.run(3);
}

BOOST_AUTO_TEST_CASE(the_names_spelled_for_io_context_are_asios_on_its_executor)
{
  using objects = turnloop::io_objects<io_context_executor>;
  static_assert(std::is_same_v<objects::steady_timer,
      asio::basic_waitable_timer<std::chrono::steady_clock,
        asio::wait_traits<std::chrono::steady_clock>, io_context_executor>>);
  static_assert(std::is_same_v<objects::ip::tcp::socket,
      asio::basic_stream_socket<asio::ip::tcp, io_context_executor>>);
#if !defined(_WIN32)
  static_assert(std::is_same_v<objects::local::stream_protocol::socket,
      asio::basic_stream_socket<asio::local::stream_protocol,
        io_context_executor>>);
  static_assert(std::is_same_v<objects::posix::stream_descriptor,
      asio::posix::basic_stream_descriptor<io_context_executor>>);
#endif // !defined(_WIN32)
  static_assert(std::is_same_v<objects::awaitable<>,
      asio::awaitable<void, io_context_executor>>);
  static_assert(std::is_same_v<objects::use_awaitable_t,
      asio::use_awaitable_t<io_context_executor>>);
  asio::io_context ioc;
  objects::steady_timer timer(ioc);
  check_executor(timer, ioc);
}

// The loop's typed objects call their handlers in place, as io_context's
// do (turnloop/detail/loop_handler_work.hpp): an exception leaves run() as it
// does there, and run() goes on afterwards.
BOOST_AUTO_TEST_CASE(an_exception_from_a_typed_completion_leaves_run_and_the_loop_goes_on)
{
  turnloop::loop l;
  turnloop::steady_timer throwing(l, 0ms);
  turnloop::steady_timer later(l, 1ms);
  bool later_ran = false;
  throwing.async_wait([](error_code) { throw std::runtime_error("typed"); });
  later.async_wait([&](error_code ec) { BOOST_TEST(!ec); later_ran = true; });
  BOOST_CHECK_THROW(l.run(), std::runtime_error);
  BOOST_TEST(!later_ran);
  l.restart();
  l.run();
  BOOST_TEST(later_ran);
}

// Typed on the loop's executor, an operation carries no unit of the loop's
// work and its completion is the handler's call: one scheduler operation of
// io_context::run_one(), as on io_context. Typed on any_io_executor, the
// completion goes through the loop's executor, which (not in a turn of the
// loop's own) queues the handler for the next call.
BOOST_AUTO_TEST_CASE(a_typed_completion_calls_its_handler_in_place_holding_no_work,
    * test::only_where(test::counts_handlers_only, test::backend_counts_its_own))
{
  turnloop::loop l;

  bool typed_ran = false;
  turnloop::steady_timer typed(l, 0ms);
  typed.async_wait([&](error_code ec) { BOOST_TEST(!ec); typed_ran = true; });
  asio::io_context& base = l;
  BOOST_TEST(base.run_one() == 1u);
  BOOST_TEST(typed_ran);

  base.restart(); // out of work once the typed wait was done
  bool stock_ran = false;
  asio::steady_timer stock(l, 0ms);
  stock.async_wait([&](error_code ec) { BOOST_TEST(!ec); stock_ran = true; });
  BOOST_TEST(base.run_one() == 1u);
  BOOST_TEST(!stock_ran);
  base.run();
  BOOST_TEST(stock_ran);

  // Asio's bookkeeping for each (a tracked copy given back makes a loop
  // with no other work stop, as io_context's does: hence last).
  BOOST_TEST(!asio::detail::handler_work_base<executor>(0, 0,
        l.get_executor()).owns_work());
  BOOST_TEST(asio::detail::handler_work_base<asio::any_io_executor>(0, 0,
        asio::any_io_executor(l.get_executor())).owns_work());
}

// A handler bound to another loop keeps that loop running until the
// completion arrives there: the work the I/O object's own loop does not
// count for it is taken on the other loop.
BOOST_AUTO_TEST_CASE(a_typed_completion_bound_to_another_loop_keeps_that_loop_running_and_runs_there)
{
  turnloop::loop timers;
  turnloop::loop handlers;
  turnloop::steady_timer timer(timers, 1ms);
  bool on_handlers_loop = false;
  timer.async_wait(asio::bind_executor(handlers, [&](error_code ec) {
    BOOST_TEST(!ec);
    on_handlers_loop = handlers.get_executor().running_in_this_thread();
  }));
  std::thread runner([&] { timers.run(); });
  handlers.run();
  runner.join();
  BOOST_TEST(on_handlers_loop);
}
