//
// test/loop_executor.cpp
//
// The executor satisfies Asio's executor concept and every property it
// claims, converts to the polymorphic executors, and counts work correctly.
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_executor
#include <boost/test/unit_test.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <memory>
#include <optional>
#include <thread>

#include "support.hpp"

namespace asio = boost::asio;
namespace execution = boost::asio::execution;
using executor = turnloop::loop::executor_type;

// The concept and every property the executor claims.
static_assert(execution::is_executor<executor>::value);
static_assert(std::is_nothrow_copy_constructible_v<executor>);
static_assert(std::is_nothrow_move_constructible_v<executor>);
static_assert(noexcept(std::declval<executor>() == std::declval<executor>()));
static_assert(noexcept(std::declval<executor>() != std::declval<executor>()));

static_assert(asio::can_query<executor, execution::context_t>::value);
static_assert(asio::can_query<executor, execution::blocking_t>::value);
static_assert(asio::can_query<executor, execution::relationship_t>::value);
static_assert(asio::can_query<executor, execution::outstanding_work_t>::value);
static_assert(asio::can_query<executor, execution::mapping_t>::value);
static_assert(asio::can_query<executor,
    execution::allocator_t<void>>::value);
static_assert(asio::can_query<executor,
    execution::context_as_t<asio::execution_context&>>::value);

static_assert(asio::can_require<executor, execution::blocking_t::never_t>::value);
static_assert(asio::can_require<executor,
    execution::blocking_t::possibly_t>::value);
static_assert(asio::can_require<executor,
    execution::relationship_t::fork_t>::value);
static_assert(asio::can_require<executor,
    execution::relationship_t::continuation_t>::value);
static_assert(asio::can_require<executor,
    execution::outstanding_work_t::tracked_t>::value);
static_assert(asio::can_require<executor,
    execution::outstanding_work_t::untracked_t>::value);
static_assert(asio::can_require<executor,
    execution::allocator_t<std::allocator<int>>>::value);
static_assert(asio::can_prefer<executor,
    execution::outstanding_work_t::tracked_t>::value);
static_assert(asio::can_prefer<executor, execution::blocking_t::possibly_t,
    execution::allocator_t<std::allocator<void>>>::value);

// Polymorphic wrappers.
static_assert(std::is_convertible_v<executor, asio::any_io_executor>);
static_assert(std::is_constructible_v<asio::executor, executor>);

// Tracked and untracked are distinct types, as for io_context.
static_assert(!std::is_same_v<executor,
    asio::require_result<executor,
      execution::outstanding_work_t::tracked_t>::type>);

BOOST_AUTO_TEST_CASE(queries_report_the_loop_and_defaults)
{
  turnloop::loop l;
  executor ex = l.get_executor();
  BOOST_TEST(&asio::query(ex, execution::context) == &l);
  BOOST_TEST(&asio::query(ex, execution::context_as<asio::execution_context&>)
      == static_cast<asio::execution_context*>(&l));
  BOOST_TEST((asio::query(ex, execution::blocking) == execution::blocking.possibly));
  BOOST_TEST((asio::query(ex, execution::relationship) == execution::relationship.fork));
  BOOST_TEST((asio::query(ex, execution::outstanding_work)
      == execution::outstanding_work.untracked));
  BOOST_TEST((asio::query(ex, execution::mapping) == execution::mapping.thread));
  BOOST_TEST(&ex.context() == &l);
}

BOOST_AUTO_TEST_CASE(require_changes_exactly_the_property_asked_for)
{
  turnloop::loop l;
  executor ex = l.get_executor();

  auto never = asio::require(ex, execution::blocking.never);
  BOOST_TEST((asio::query(never, execution::blocking) == execution::blocking.never));
  BOOST_TEST((asio::query(asio::require(never, execution::blocking.possibly),
          execution::blocking) == execution::blocking.possibly));

  auto cont = asio::require(ex, execution::relationship.continuation);
  BOOST_TEST((asio::query(cont, execution::relationship)
      == execution::relationship.continuation));
  BOOST_TEST((asio::query(cont, execution::blocking) == execution::blocking.possibly));
  BOOST_TEST((asio::query(asio::require(cont, execution::relationship.fork),
          execution::relationship) == execution::relationship.fork));

  auto tracked = asio::require(never, execution::outstanding_work.tracked);
  BOOST_TEST((asio::query(tracked, execution::outstanding_work)
      == execution::outstanding_work.tracked));
  BOOST_TEST((asio::query(tracked, execution::blocking) == execution::blocking.never));
  auto untracked = asio::require(tracked, execution::outstanding_work.untracked);
  BOOST_TEST((asio::query(untracked, execution::outstanding_work)
      == execution::outstanding_work.untracked));

  std::allocator<int> a;
  auto with_alloc = asio::require(ex, execution::allocator(a));
  BOOST_TEST((asio::query(with_alloc, execution::allocator) == a));
  BOOST_TEST(&asio::query(with_alloc, execution::context) == &l);
}

BOOST_AUTO_TEST_CASE(executors_compare_by_loop)
{
  turnloop::loop a;
  turnloop::loop b;
  BOOST_TEST((a.get_executor() == a.get_executor()));
  BOOST_TEST((a.get_executor() != b.get_executor()));
  auto never = asio::require(a.get_executor(), execution::blocking.never);
  BOOST_TEST((never == a.get_executor()));
}

BOOST_AUTO_TEST_CASE(a_tracked_executor_keeps_run_alive_until_released)
{
  turnloop::loop l;
  std::optional<asio::require_result<executor,
    execution::outstanding_work_t::tracked_t>::type> work(
      asio::require(l.get_executor(), execution::outstanding_work.tracked));
  int ran = 0;
  // The tracked executor is released from inside a handler: run() must not
  // return before, and must return after.
  asio::post(l, [&] {
    ++ran;
    asio::post(l, [&] { ++ran; work.reset(); });
  });
  BOOST_TEST(l.run() == 2u);
  BOOST_TEST(ran == 2);
  BOOST_TEST(l.stopped());
}

BOOST_AUTO_TEST_CASE(an_untracked_executor_does_not_keep_run_alive)
{
  turnloop::loop l;
  executor ex = l.get_executor();
  BOOST_TEST(l.run() == 0u);
  BOOST_TEST(l.stopped());
  (void)ex;
}

BOOST_AUTO_TEST_CASE(copies_and_moves_of_tracked_executors_balance)
{
  turnloop::loop l;
  {
    auto t1 = asio::require(l.get_executor(), execution::outstanding_work.tracked);
    auto t2 = t1;              // copy: one more unit
    auto t3 = std::move(t2);   // move: transfers
    t2 = t3;                   // copy-assign into a moved-from
    t1 = std::move(t3);        // move-assign releases t1's own unit
    asio::any_io_executor any = t1;
    (void)any;
  }
  // Every unit was released: run() finds no work.
  BOOST_TEST(l.run() == 0u);
}

BOOST_AUTO_TEST_CASE(work_guard_on_the_loop_thread_costs_a_local_unit)
{
  turnloop::loop l;
  int ran = 0;
  asio::post(l, [&] {
    // Made on the loop thread: counted without atomics, and still keeps the
    // loop alive until it is reset from a later handler.
    auto guard = std::make_shared<asio::executor_work_guard<executor>>(
        l.get_executor());
    asio::post(l, [&, guard] { ++ran; guard->reset(); });
  });
  BOOST_TEST(l.run() == 2u);
  BOOST_TEST(ran == 1);
}

BOOST_AUTO_TEST_CASE(a_local_unit_released_on_another_thread_ends_run,
    * test::threads_label())
{
  turnloop::loop l;
  std::optional<asio::executor_work_guard<executor>> guard;
  std::atomic<bool> made{false};
  std::thread releaser;
  asio::post(l, [&] {
    guard.emplace(l.get_executor());
    releaser = std::thread([&] {
      test::wait_for([&] { return made.load(); });
      guard.reset(); // releases a loop-thread unit from this thread
    });
    made = true;
  });
  BOOST_TEST(l.run() == 1u);
  releaser.join();
  BOOST_TEST(l.stopped());
}

BOOST_AUTO_TEST_CASE(networking_ts_members_work)
{
  turnloop::loop l;
  executor ex = l.get_executor();
  int order = 0;
  int posted = 0;
  int dispatched = 0;
  ex.on_work_started();
  ex.post([&] {
    posted = ++order;
    ex.dispatch([&] { dispatched = ++order; }, std::allocator<void>());
    ex.defer([&] { ex.on_work_finished(); }, std::allocator<void>());
  }, std::allocator<void>());
  BOOST_TEST(l.run() == 2u);
  BOOST_TEST(posted == 1);
  BOOST_TEST(dispatched == 2);

  l.restart();
  asio::executor poly(l.get_executor());
  bool ran = false;
  asio::post(poly, [&] { ran = true; });
  l.run();
  BOOST_TEST(ran);
}

BOOST_AUTO_TEST_CASE(running_in_this_thread_is_true_only_inside_run)
{
  turnloop::loop l;
  BOOST_TEST(!l.get_executor().running_in_this_thread());
  bool inside = false;
  asio::post(l, [&] { inside = l.get_executor().running_in_this_thread(); });
  l.run();
  BOOST_TEST(inside);
  BOOST_TEST(!l.get_executor().running_in_this_thread());
}

namespace {

template <typename T>
struct counting_allocator
{
  using value_type = T;

  int* allocations;
  int* live;

  counting_allocator(int* a, int* l) noexcept : allocations(a), live(l) {}

  template <typename U>
  counting_allocator(const counting_allocator<U>& o) noexcept
    : allocations(o.allocations), live(o.live)
  {
  }

  T* allocate(std::size_t n)
  {
    ++*allocations;
    ++*live;
    return std::allocator<T>().allocate(n);
  }

  void deallocate(T* p, std::size_t n)
  {
    --*live;
    std::allocator<T>().deallocate(p, n);
  }

  template <typename U>
  bool operator==(const counting_allocator<U>& o) const noexcept
  {
    return allocations == o.allocations;
  }

  template <typename U>
  bool operator!=(const counting_allocator<U>& o) const noexcept
  {
    return !(*this == o);
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_post_allocates_through_the_executor_allocator)
{
  turnloop::loop l;
  int allocations = 0;
  int live = 0;
  auto ex = asio::require(l.get_executor(), execution::blocking.never,
      execution::allocator(counting_allocator<void>(&allocations, &live)));
  bool ran = false;
  ex.execute([&] { ran = true; });
  BOOST_TEST(allocations == 1);
  BOOST_TEST(live == 1);
  l.run();
  BOOST_TEST(ran);
  BOOST_TEST(live == 0); // freed before the handler ran, not leaked
}
