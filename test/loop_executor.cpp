//
// test/loop_executor.cpp
//
// The executor satisfies Asio's executor concept and every property it
// claims, converts to the polymorphic executors, and counts work correctly.
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_executor
#include <boost/test/unit_test.hpp>

#include "asio.hpp"

#include <memory>
#include <optional>
#include <thread>

#include "support.hpp"

namespace execution = asio::execution;
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
#if TURNLOOP_ASIO_VERSION >= 103800
  // As io_context's executor answers from Asio 1.38.
  BOOST_TEST((asio::query(ex, execution::inline_exception_handling)
      == execution::inline_exception_handling.capture));
#endif // TURNLOOP_ASIO_VERSION >= 103800
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

BOOST_AUTO_TEST_CASE(executors_compare_by_loop_and_properties_as_io_contexts_do)
{
  turnloop::loop a;
  turnloop::loop b;
  BOOST_TEST((a.get_executor() == a.get_executor()));
  BOOST_TEST((a.get_executor() != b.get_executor()));
  // io_context's executors with other blocking or relationship properties
  // compare unequal; so do the loop's.
  auto never = asio::require(a.get_executor(), execution::blocking.never);
  BOOST_TEST((never != a.get_executor()));
  BOOST_TEST((never == asio::require(a.get_executor(), execution::blocking.never)));
  BOOST_TEST((asio::require(never, execution::blocking.possibly) == a.get_executor()));
  auto continuation = asio::require(a.get_executor(),
      execution::relationship.continuation);
  BOOST_TEST((continuation != a.get_executor()));
  // A tracked copy holds a unit of work; it is still the same executor.
  auto tracked = asio::prefer(a.get_executor(), execution::outstanding_work.tracked);
  auto copy = tracked;
  BOOST_TEST((copy == tracked));
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

namespace {

using tracked_executor = asio::require_result<executor,
  execution::outstanding_work_t::tracked_t>::type;

// Runs @p l on a thread after @p make_work ran in a handler there, waits
// until the loop is parked with that work as the only thing keeping it, and
// returns whether run() had returned instead.
template <typename MakeWork>
bool returned_instead_of_parking(turnloop::loop& l, std::thread& runner,
    std::atomic<bool>& returned, MakeWork make_work)
{
  std::atomic<pid_t> tid{0};
  asio::post(l, [&] {
    make_work();
    tid = test::this_thread_id();
  });
  runner = std::thread([&] { l.run(); returned = true; });
  test::wait_for([&] { return tid.load() != 0; });
  test::wait_for([&] { return returned.load() || test::parked_in_reactor(tid); });
  return returned.load();
}

} // namespace

BOOST_AUTO_TEST_CASE(a_tracked_copy_made_on_the_loop_thread_keeps_run_alive,
    * test::threads_label())
{
  // Made inside a handler, the copy's unit of work is a plain counter (no
  // atomics); it must still be the work that keeps run() from returning.
  turnloop::loop l;
  std::optional<tracked_executor> work;
  std::atomic<bool> returned{false};
  std::thread runner;
  BOOST_TEST(!returned_instead_of_parking(l, runner, returned, [&] {
    work.emplace(asio::prefer(l.get_executor(),
          execution::outstanding_work.tracked));
  }));
  asio::post(l, [&] { work.reset(); }); // released on the loop thread
  runner.join();
  BOOST_TEST(l.stopped());
}

BOOST_AUTO_TEST_CASE(a_loop_thread_unit_released_on_another_thread_ends_run,
    * test::threads_label())
{
  turnloop::loop l;
  std::optional<tracked_executor> work;
  std::atomic<bool> returned{false};
  std::thread runner;
  BOOST_TEST(!returned_instead_of_parking(l, runner, returned, [&] {
    work.emplace(asio::prefer(l.get_executor(),
          execution::outstanding_work.tracked));
  }));
  work.reset(); // a loop-thread unit released here must wake the loop
  BOOST_TEST(test::wait_for([&] { return returned.load(); }));
  runner.join();
  BOOST_TEST(l.stopped());
}

BOOST_AUTO_TEST_CASE(a_work_guard_keeps_run_alive_through_the_ts_members,
    * test::threads_label())
{
  // executor_work_guard uses on_work_started()/on_work_finished() for an
  // executor that has them: units any thread may release.
  turnloop::loop l;
  std::optional<asio::executor_work_guard<executor>> guard;
  std::atomic<bool> returned{false};
  std::thread runner;
  BOOST_TEST(!returned_instead_of_parking(l, runner, returned, [&] {
    guard.emplace(l.get_executor());
  }));
  guard.reset();
  BOOST_TEST(test::wait_for([&] { return returned.load(); }));
  runner.join();
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
