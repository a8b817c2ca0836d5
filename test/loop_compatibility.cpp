//
// test/loop_compatibility.cpp
//
// Code written against io_context compiles and runs when handed a
// turnloop::loop, whatever io_context type it spells: io_context's executor
// (plain, tracked, in a work guard, in a strand, as an I/O object's executor
// type), io_context::strand, io_context::count_type. Each spelling is
// compiled here and checked to run on the loop's thread and to track work.
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_compatibility
#include <boost/test/unit_test.hpp>

#include "asio.hpp"
#include "support.hpp"

#include <array>
#include <chrono>
#include <type_traits>
#include <vector>

#if !defined(_WIN32)
# include <unistd.h>
#endif // !defined(_WIN32)

#include "stream_pair.hpp"

using io_executor = asio::io_context::executor_type;
using namespace std::chrono_literals;

namespace {

// Code that takes io_context's executor by name.
int run_through_base_executor(io_executor ex, asio::io_context& ctx)
{
  int ran = 0;
  asio::post(ex, [&] { ++ran; });
  ctx.run();
  return ran;
}

// True while the loop would not run out of work: poll() on a context with no
// work stops it, as io_context's does.
bool work_is_held(turnloop::loop& l)
{
  l.poll();
  const bool held = !l.stopped();
  l.restart();
  return held;
}

} // namespace

BOOST_AUTO_TEST_CASE(the_loops_executor_converts_to_io_contexts_and_runs_on_the_loop)
{
  static_assert(std::is_convertible_v<turnloop::loop::executor_type, io_executor>);
  turnloop::loop l;
  const io_executor ex = l.get_executor();
  BOOST_TEST(&ex.context() == static_cast<asio::io_context*>(&l));
  BOOST_TEST((ex == static_cast<asio::io_context&>(l).get_executor()));

  bool on_loop = false;
  asio::post(ex, [&] { on_loop = l.get_executor().running_in_this_thread(); });
  BOOST_TEST(test::ran(l.run(), 1u));
  BOOST_TEST(on_loop);
}

BOOST_AUTO_TEST_CASE(a_function_taking_io_contexts_executor_accepts_the_loops)
{
  turnloop::loop l;
  BOOST_TEST(run_through_base_executor(l.get_executor(), l) == 1);
}

BOOST_AUTO_TEST_CASE(a_tracked_loop_executor_converts_to_a_tracked_io_context_executor)
{
  turnloop::loop l;
  auto tracked = asio::prefer(l.get_executor(), asio::execution::outstanding_work.tracked);
  using tracked_io = decltype(asio::prefer(
      std::declval<io_executor>(), asio::execution::outstanding_work.tracked));
  {
    const tracked_io ex = tracked;
    tracked = decltype(tracked)(asio::require(l.get_executor(),
        asio::execution::outstanding_work.untracked).require(
        asio::execution::outstanding_work.tracked));
    BOOST_TEST(work_is_held(l));
  }
  {
    const io_executor ex = asio::require(l.get_executor(),
        asio::execution::blocking.never);
    BOOST_TEST((asio::query(ex, asio::execution::blocking)
        == asio::execution::blocking.never));
  }
}

BOOST_AUTO_TEST_CASE(a_work_guard_spelled_on_io_contexts_executor_holds_the_loops_work)
{
  turnloop::loop l;
  BOOST_TEST(!work_is_held(l));
  {
    asio::executor_work_guard<io_executor> w = asio::make_work_guard(l);
    BOOST_TEST(w.owns_work());
    BOOST_TEST(work_is_held(l));
    w.reset();
    BOOST_TEST(!work_is_held(l));
  }
  {
    asio::executor_work_guard<io_executor> w(l.get_executor());
    BOOST_TEST(work_is_held(l));
  }
  BOOST_TEST(!work_is_held(l));
}

BOOST_AUTO_TEST_CASE(the_loops_own_work_guard_holds_work_until_reset_or_destroyed)
{
  turnloop::loop l;
  auto w = asio::make_work_guard(l);
  static_assert(std::is_same_v<decltype(w)::executor_type, turnloop::loop::executor_type>);
  BOOST_TEST(w.owns_work());
  BOOST_TEST(work_is_held(l));
  {
    auto copy = w;
    w.reset();
    BOOST_TEST(!w.owns_work());
    BOOST_TEST(work_is_held(l));
    auto moved = std::move(copy);
    BOOST_TEST(!copy.owns_work());
    BOOST_TEST(moved.owns_work());
    BOOST_TEST(work_is_held(l));
  }
  BOOST_TEST(!work_is_held(l));
  BOOST_TEST((w.get_executor() == l.get_executor()));
}

BOOST_AUTO_TEST_CASE(a_timer_typed_on_io_contexts_executor_built_from_the_loop_completes)
{
  turnloop::loop l;
  asio::basic_waitable_timer<std::chrono::steady_clock,
      asio::wait_traits<std::chrono::steady_clock>, io_executor> t(l, 1ms);
  bool on_loop = false;
  t.async_wait([&](turnloop::error_code ec) {
    BOOST_TEST(!ec);
    on_loop = l.get_executor().running_in_this_thread();
  });
  BOOST_TEST(test::ran(l.run(), 1u));
  BOOST_TEST(on_loop);
}

BOOST_AUTO_TEST_CASE(sockets_and_descriptors_typed_on_io_contexts_executor_run_on_the_loop)
{
  // A socketpair (a TCP pair on Windows), and a pipe where Asio has POSIX
  // descriptors.
  using socket = asio::basic_stream_socket<test::pair_protocol, io_executor>;
  turnloop::loop l;
  socket a(l);
  socket b(l.get_executor());
  test::connect_pair(a, b);

  std::array<char, 4> from_socket{};
  int done = 0;
  int expected = 2;
  asio::async_read(b, asio::buffer(from_socket),
      [&](turnloop::error_code ec, std::size_t n) {
        BOOST_TEST(!ec);
        BOOST_TEST(n == 4u);
        ++done;
      });
  asio::async_write(a, asio::buffer("ping", 4),
      [&](turnloop::error_code ec, std::size_t) { BOOST_TEST(!ec); ++done; });
#if defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
  int fds[2];
  BOOST_TEST_REQUIRE(::pipe(fds) == 0);
  asio::posix::basic_stream_descriptor<io_executor> in(l, fds[0]);
  asio::posix::basic_stream_descriptor<io_executor> out(l, fds[1]);
  std::array<char, 4> from_pipe{};
  expected += 2;
  asio::async_read(in, asio::buffer(from_pipe),
      [&](turnloop::error_code ec, std::size_t n) {
        BOOST_TEST(!ec);
        BOOST_TEST(n == 4u);
        ++done;
      });
  asio::async_write(out, asio::buffer("pipe", 4),
      [&](turnloop::error_code ec, std::size_t) { BOOST_TEST(!ec); ++done; });
#endif // defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
  l.run();
  BOOST_TEST(done == expected);
  BOOST_TEST(std::string(from_socket.data(), 4) == "ping");
#if defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
  BOOST_TEST(std::string(from_pipe.data(), 4) == "pipe");
#endif // defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
}

namespace {

// Five handlers through an io_context::strand, in order; returns what run()
// counted.
asio::io_context::count_type run_through_io_context_strand(asio::io_context& ctx)
{
  asio::io_context::strand s(ctx);
  std::vector<int> order;
  for (int i = 0; i != 5; ++i)
    asio::post(s, [&, i] {
      BOOST_TEST(s.running_in_this_thread());
      order.push_back(i);
    });
  const asio::io_context::count_type n = ctx.run();
  BOOST_TEST(order == (std::vector<int>{0, 1, 2, 3, 4}), boost::test_tools::per_element());
  return n;
}

} // namespace

BOOST_AUTO_TEST_CASE(io_context_strand_built_from_the_loop_runs_handlers_in_order)
{
  asio::io_context ioc;
  const auto stock = run_through_io_context_strand(ioc);
  turnloop::loop l;
  const auto ours = run_through_io_context_strand(l);
  BOOST_TEST(ours == stock);
}

BOOST_AUTO_TEST_CASE(a_strand_spelled_on_io_contexts_executor_accepts_make_strand_of_the_loop)
{
  turnloop::loop l;
  asio::strand<io_executor> from_loop = asio::make_strand(l);
  asio::strand<io_executor> from_executor = asio::make_strand(l.get_executor());
  auto own = asio::make_strand(l);
  static_assert(std::is_same_v<decltype(own), asio::strand<turnloop::loop::executor_type>>);
  std::vector<int> order1;
  std::vector<int> order2;
  std::vector<int> order3;
  for (int i = 0; i != 3; ++i)
  {
    asio::post(from_loop, [&, i] {
      BOOST_TEST(from_loop.running_in_this_thread());
      order1.push_back(i);
    });
    asio::post(from_executor, [&, i] {
      BOOST_TEST(from_executor.running_in_this_thread());
      order2.push_back(i);
    });
    asio::post(own, [&, i] {
      BOOST_TEST(own.running_in_this_thread());
      order3.push_back(i);
    });
  }
  l.run();
  const std::vector<int> in_order{0, 1, 2};
  BOOST_TEST(order1 == in_order, boost::test_tools::per_element());
  BOOST_TEST(order2 == in_order, boost::test_tools::per_element());
  BOOST_TEST(order3 == in_order, boost::test_tools::per_element());
}

namespace {

// What Beast's basic_stream test compares: an executor, I/O object or strand
// spelled on io_context's executor against the context's own. On a loop the
// two sides are different types; the answers must be io_context's.
template <typename Context>
void compare_with_io_context_spellings(Context& ctx)
{
  const auto ex = ctx.get_executor();
  const io_executor spelled = ex;
  BOOST_TEST((spelled == ex));
  BOOST_TEST((ex == spelled));
  BOOST_TEST(!(spelled != ex));
  BOOST_TEST(!(ex != spelled));

  asio::basic_stream_socket<asio::ip::tcp, io_executor> socket(ctx);
  BOOST_TEST((socket.get_executor() == ex));
  BOOST_TEST((ex == socket.get_executor()));

  // Same context, other properties: not equal, as io_context's.
  const auto never = asio::require(ex, asio::execution::blocking.never);
  BOOST_TEST((spelled != never));
  BOOST_TEST((never != spelled));
  const io_executor spelled_never = never;
  BOOST_TEST((spelled_never == never));
  BOOST_TEST((never == spelled_never));

  asio::io_context other;
  const io_executor elsewhere = other.get_executor();
  BOOST_TEST((elsewhere != ex));
  BOOST_TEST((ex != elsewhere));
  BOOST_TEST(!(elsewhere == ex));

  const auto strand = asio::make_strand(ctx);
  const asio::strand<io_executor> spelled_strand = strand;
  BOOST_TEST((spelled_strand == strand));
  BOOST_TEST((strand == spelled_strand));
  BOOST_TEST(!(spelled_strand != strand));
  BOOST_TEST(!(strand != spelled_strand));
  const asio::strand<io_executor> another = asio::make_strand(ctx);
  BOOST_TEST((another != strand));
  BOOST_TEST((strand != another));
  BOOST_TEST(!(another == strand));
}

} // namespace

BOOST_AUTO_TEST_CASE(io_context_spellings_compare_with_the_loops_executors_as_on_io_context)
{
  asio::io_context ioc;
  compare_with_io_context_spellings(ioc);
  turnloop::loop l;
  compare_with_io_context_spellings(l);
}

BOOST_AUTO_TEST_CASE(bind_executor_with_io_contexts_executor_runs_the_handler_on_the_loop)
{
  turnloop::loop l;
  asio::steady_timer t(l, 1ms);
  const io_executor ex = l.get_executor();
  bool ran = false;
  t.async_wait(asio::bind_executor(ex, [&](turnloop::error_code ec) {
    BOOST_TEST(!ec);
    ran = l.get_executor().running_in_this_thread();
  }));
  l.run();
  BOOST_TEST(ran);
}

BOOST_AUTO_TEST_CASE(any_io_executor_holds_the_loops_executor_not_io_contexts)
{
  // What cannot be the same: the type-erased executor holds the loop's own
  // type, so code recovering io_context's gets nullptr and must ask for
  // turnloop::loop::executor_type instead (doc/compatibility.md).
  turnloop::loop l;
  asio::any_io_executor ex = l.get_executor();
  BOOST_TEST(ex.target<io_executor>() == nullptr);
  BOOST_TEST(ex.target<turnloop::loop::executor_type>() != nullptr);

  asio::any_io_executor base = io_executor(l.get_executor());
  BOOST_TEST(base.target<io_executor>() != nullptr);
}

#if TURNLOOP_ASIO_VERSION >= 103400

namespace {

struct counted_service : asio::execution_context::service
{
  using key_type = counted_service;
  static asio::execution_context::id id;
  explicit counted_service(asio::execution_context& ctx)
    : service(ctx)
  {
  }
  void shutdown() override {}
};

asio::execution_context::id counted_service::id;

struct counted_service_maker : asio::execution_context::service_maker
{
  void make(asio::execution_context& ctx) const override
  {
    asio::make_service<counted_service>(ctx);
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_loop_is_built_with_initial_services_like_io_context)
{
  turnloop::loop l{counted_service_maker{}};
  BOOST_TEST(asio::has_service<counted_service>(l));
  int ran = 0;
  asio::post(l, [&] { ++ran; });
  BOOST_TEST(l.run() == 1u);
  BOOST_TEST(ran == 1);
}

#endif // TURNLOOP_ASIO_VERSION >= 103400
