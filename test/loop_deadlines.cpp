//
// test/loop_deadlines.cpp
//
// run_for, run_until, run_one_for and run_one_until return only when their
// time is up, work runs out, or the loop is stopped, as io_context's do:
// never because one turn happened to run no handler. And a nested poll()
// counts its handlers for itself, not for the run() around it.
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_deadlines
#include <boost/test/unit_test.hpp>

#include <turnloop/buffer_pool.hpp>
#include <turnloop/detail/engine/turn_source.hpp>

#include "asio.hpp"

#include <atomic>
#include <optional>
#include <thread>

#include "support.hpp"

using namespace std::chrono_literals;

namespace {

// A turn source that is signalled and then has nothing to run: the turn it
// causes runs no handler.
class empty_source final : public turnloop::detail::turn_source
{
public:
  explicit empty_source(turnloop::loop& l)
    : core_(turnloop::detail::core_of(l))
  {
    core_.add_source(*this);
  }

  ~empty_source()
  {
    core_.remove_source(*this);
  }

  void signal()
  {
    core_.signal(*this);
  }

  std::atomic<int> turns{0};

private:
  std::size_t run_ready(std::size_t) override
  {
    ++turns;
    return 0;
  }

  turnloop::detail::loop_core& core_;
};

constexpr auto span = 300ms;

bool lasted(std::chrono::steady_clock::time_point start)
{
  return std::chrono::steady_clock::now() - start >= span;
}

} // namespace

BOOST_AUTO_TEST_CASE(run_for_keeps_its_deadline_when_a_turn_runs_no_handler)
{
  turnloop::loop l;
  empty_source source(l);
  auto guard = asio::make_work_guard(l);
  source.signal();
  const auto start = std::chrono::steady_clock::now();
  BOOST_TEST(l.run_for(span) == 0u);
  BOOST_TEST(lasted(start));
  BOOST_TEST(source.turns == 1);
  BOOST_TEST(!l.stopped());
}

BOOST_AUTO_TEST_CASE(run_until_keeps_its_deadline_when_a_turn_runs_no_handler)
{
  turnloop::loop l;
  empty_source source(l);
  auto guard = asio::make_work_guard(l);
  source.signal();
  const auto start = std::chrono::steady_clock::now();
  BOOST_TEST(l.run_until(start + span) == 0u);
  BOOST_TEST(lasted(start));
  BOOST_TEST(source.turns == 1);
}

BOOST_AUTO_TEST_CASE(run_one_for_keeps_its_deadline_when_a_turn_runs_no_handler)
{
  turnloop::loop l;
  empty_source source(l);
  auto guard = asio::make_work_guard(l);
  source.signal();
  const auto start = std::chrono::steady_clock::now();
  BOOST_TEST(l.run_one_for(span) == 0u);
  BOOST_TEST(lasted(start));
  BOOST_TEST(source.turns == 1);
}

BOOST_AUTO_TEST_CASE(run_one_until_runs_the_handler_after_a_turn_that_ran_none)
{
  turnloop::loop l;
  empty_source source(l);
  auto guard = asio::make_work_guard(l);
  source.signal();
  bool ran = false;
  std::thread poster([&] {
    test::wait_for([&] { return source.turns.load() == 1; });
    asio::post(l, [&] { ran = true; });
  });
  BOOST_TEST(l.run_one_until(std::chrono::steady_clock::now() + 30s) == 1u);
  poster.join();
  BOOST_TEST(ran);
}

BOOST_AUTO_TEST_CASE(run_for_keeps_its_deadline_after_a_lease_is_released_on_another_thread,
    * test::threads_label())
{
  turnloop::config cfg;
  cfg.pooled_buffers = 2;
  turnloop::loop l(cfg);
  auto& pool = asio::use_service<turnloop::buffer_pool>(l);
  auto guard = asio::make_work_guard(l);
  std::optional<turnloop::buffer_lease> lease;
  std::atomic<bool> handed{false};
  std::atomic<bool> released{false};
  asio::post(l, [&] {
    lease.emplace(pool.try_lease());
    handed = true;
  });
  std::thread releaser([&] {
    test::wait_for([&] { return handed.load(); });
    lease.reset();
    released = true;
  });
  const auto start = std::chrono::steady_clock::now();
  BOOST_TEST(l.run_for(span) == 1u);
  BOOST_TEST(lasted(start));
  releaser.join();
  BOOST_TEST(released);
  BOOST_TEST(pool.stats().leased == 0u);
}

BOOST_AUTO_TEST_CASE(a_nested_poll_counts_its_handlers_for_itself_as_in_io_context)
{
  // io_context's own figures, for the same program.
  auto program = [](auto& ctx, std::size_t& inner) {
    asio::post(ctx, [&] {
      asio::post(ctx, [] {});
      inner = ctx.poll();
    });
    return ctx.run();
  };
  std::size_t io_inner = 0;
  asio::io_context io;
  const std::size_t io_outer = program(io, io_inner);
  BOOST_TEST(io_outer == 1u);
  BOOST_TEST(io_inner == 1u);

  turnloop::loop l;
  std::size_t inner = 0;
  BOOST_TEST(program(l, inner) == io_outer);
  BOOST_TEST(inner == io_inner);
}

BOOST_AUTO_TEST_CASE(a_nested_run_one_counts_its_handler_for_itself)
{
  turnloop::loop l;
  std::size_t inner = 0;
  asio::post(l, [&] {
    asio::post(l, [] {});
    asio::post(l, [] {});
    inner = l.run_one();
  });
  BOOST_TEST(l.run() == 2u);
  BOOST_TEST(inner == 1u);
}
