//
// test/loop_asio_versions.cpp
//
// What differs between the Asio versions turnloop supports: the version
// gate, and from Asio 1.34 the settings a loop pins in the configuration its
// scheduler and reactor are built from (a loop built from a program's own
// service_maker, and from Asio 1.36 with an allocator).
//

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE loop_asio_versions
#include <boost/test/unit_test.hpp>

#include "support.hpp"

#include "asio.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

namespace {

// A loop that runs a timer and a post from another thread works: the
// scheduler blocks in the reactor and a cross-thread post wakes it.
void check_loop_runs(turnloop::loop& l)
{
  std::atomic<bool> timer_fired{false};
  asio::steady_timer t(l, std::chrono::milliseconds(1));
  t.async_wait([&](turnloop::error_code ec) { timer_fired = !ec; });

  std::atomic<bool> posted{false};
  bool parked = false;
  auto guard = asio::make_work_guard(l);
  const pid_t loop_thread = test::this_thread_id();
  std::thread poster([&] {
    // Once the timer has fired the loop blocks in epoll_wait, with only the
    // guard left: the post must wake it.
    parked = test::wait_for([&] {
      return timer_fired.load() && test::parked_in_reactor(loop_thread);
    });
    asio::post(l, [&] { posted = true; guard.reset(); });
  });
  l.run();
  poster.join();
  BOOST_TEST(parked);
  BOOST_TEST(timer_fired.load());
  BOOST_TEST(posted.load());
}

} // namespace

BOOST_AUTO_TEST_CASE(the_asio_in_use_is_within_the_tested_range)
{
  BOOST_TEST(TURNLOOP_ASIO_VERSION >= TURNLOOP_ASIO_OLDEST_TESTED);
  BOOST_TEST(TURNLOOP_ASIO_VERSION <= TURNLOOP_ASIO_NEWEST_TESTED);
  turnloop::loop l;
  check_loop_runs(l);
}

#if TURNLOOP_ASIO_VERSION >= 103400

namespace {

long long setting(turnloop::loop& l, const char* section, const char* key)
{
  return asio::config(l).get(section, key, -2LL);
}

// Builds a loop from config_from_string(@p text) and returns what its
// constructor threw, as what(), or "" if it threw nothing.
std::string refusal_of(const char* text)
{
  try
  {
    turnloop::loop l{asio::config_from_string(text)};
  }
  catch (const turnloop::system_error& e)
  {
    BOOST_TEST(e.code() == make_error_code(turnloop::error::invalid_config));
    return e.what();
  }
  return "";
}

} // namespace

BOOST_AUTO_TEST_CASE(a_default_loop_runs_its_scheduler_in_one_thread_mode_with_locking)
{
  turnloop::loop l;
  BOOST_TEST(setting(l, "scheduler", "concurrency_hint") == 1);
  BOOST_TEST(setting(l, "scheduler", "locking") == 1);
  BOOST_TEST(setting(l, "reactor", "io_locking") == 1);
  BOOST_TEST(setting(l, "reactor", "registration_locking") == 1);
}

BOOST_AUTO_TEST_CASE(a_loop_built_from_a_service_maker_keeps_the_programs_other_settings,
    * test::threads_label())
{
  turnloop::loop l(asio::config_from_string(
      "reactor.preallocated_io_objects=7\ntimer.heap_reserve=3"));
  BOOST_TEST(setting(l, "reactor", "preallocated_io_objects") == 7);
  BOOST_TEST(setting(l, "timer", "heap_reserve") == 3);
  BOOST_TEST(setting(l, "resolver", "threads") == -2); // unset stays unset
  check_loop_runs(l);
}

BOOST_AUTO_TEST_CASE(a_loop_pins_the_concurrency_hint_to_one_whatever_the_program_asks,
    * test::threads_label())
{
  turnloop::loop l(asio::config_from_string("scheduler.concurrency_hint=8"));
  BOOST_TEST(setting(l, "scheduler", "concurrency_hint") == 1);
  check_loop_runs(l);
}

BOOST_AUTO_TEST_CASE(a_loop_pins_locking_spinning_and_waits_the_program_left_unset)
{
  turnloop::loop l(asio::config_from_string(""));
  BOOST_TEST(setting(l, "scheduler", "concurrency_hint") == 1);
  BOOST_TEST(setting(l, "scheduler", "locking") == 1);
  BOOST_TEST(setting(l, "scheduler", "locking_spin_count") == 0);
  BOOST_TEST(setting(l, "scheduler", "task_usec") == -1);
  BOOST_TEST(setting(l, "scheduler", "wait_usec") == -1);
  BOOST_TEST(setting(l, "scheduler", "assume_continuation") == 1);
  BOOST_TEST(setting(l, "reactor", "registration_locking") == 1);
  BOOST_TEST(setting(l, "reactor", "registration_locking_spin_count") == 0);
  BOOST_TEST(setting(l, "reactor", "io_locking") == 1);
  BOOST_TEST(setting(l, "reactor", "io_locking_spin_count") == 0);
}

BOOST_AUTO_TEST_CASE(a_loop_refuses_each_setting_it_cannot_run_with_and_names_it)
{
  const char* refused[][2] = {
    {"scheduler.locking=0", "scheduler.locking"},
    {"scheduler.locking_spin_count=100", "scheduler.locking_spin_count"},
    {"scheduler.task_usec=0", "scheduler.task_usec"},
    {"scheduler.wait_usec=500", "scheduler.wait_usec"},
    {"scheduler.assume_continuation=0", "scheduler.assume_continuation"},
    {"reactor.registration_locking=0", "reactor.registration_locking"},
    {"reactor.registration_locking_spin_count=8",
      "reactor.registration_locking_spin_count"},
    {"reactor.io_locking=0", "reactor.io_locking"},
    {"reactor.io_locking_spin_count=8", "reactor.io_locking_spin_count"},
  };
  for (const auto& [text, name] : refused)
  {
    const std::string what = refusal_of(text);
    BOOST_TEST_INFO(text << " refused as: " << what);
    BOOST_TEST(what.find(name) != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(a_pinned_setting_given_its_pinned_value_is_accepted)
{
  BOOST_TEST(refusal_of("scheduler.locking=1\nreactor.io_locking_spin_count=0\n"
      "scheduler.task_usec=-1") == "");
}

namespace {

// A service a program's maker makes, as in Asio's own io_context test.
class program_service : public asio::execution_context::service
{
public:
  static asio::execution_context::id id;

  explicit program_service(asio::execution_context& ctx, int value = 0)
    : service(ctx),
      value_(value)
  {
  }

  int value() const noexcept
  {
    return value_;
  }

private:
  void shutdown() override
  {
  }

  int value_;
};

asio::execution_context::id program_service::id;

struct program_service_maker : asio::execution_context::service_maker
{
  void make(asio::execution_context& ctx) const override
  {
    asio::make_service<program_service>(ctx, 42);
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_service_maker_that_makes_no_configuration_makes_its_services_in_the_loop,
    * test::threads_label())
{
  turnloop::loop l{program_service_maker{}};
  BOOST_TEST(asio::has_service<program_service>(l));
  BOOST_TEST(asio::use_service<program_service>(l).value() == 42);
  BOOST_TEST(setting(l, "scheduler", "concurrency_hint") == 1);
  BOOST_TEST(setting(l, "scheduler", "locking") == 1);
  check_loop_runs(l);
}

BOOST_AUTO_TEST_CASE(a_loop_from_a_service_maker_still_checks_its_own_config)
{
  turnloop::config cfg;
  cfg.events_per_turn = 0;
  try
  {
    turnloop::loop l(asio::config_from_string(""), cfg);
    BOOST_FAIL("an invalid turnloop::config was accepted");
  }
  catch (const turnloop::system_error& e)
  {
    BOOST_TEST(e.code() == make_error_code(turnloop::error::invalid_config));
    BOOST_TEST(std::string(e.what()).find("events_per_turn") != std::string::npos);
  }
}

#endif // TURNLOOP_ASIO_VERSION >= 103400

#if TURNLOOP_ASIO_VERSION >= 103600

namespace {

// Counts what Asio allocates through it.
template <typename T>
struct counting_allocator
{
  using value_type = T;

  std::shared_ptr<std::atomic<long>> count;

  explicit counting_allocator(std::shared_ptr<std::atomic<long>> c) noexcept
    : count(std::move(c))
  {
  }

  template <typename U>
  counting_allocator(const counting_allocator<U>& other) noexcept
    : count(other.count)
  {
  }

  T* allocate(std::size_t n)
  {
    count->fetch_add(1);
    return std::allocator<T>().allocate(n);
  }

  void deallocate(T* p, std::size_t n) noexcept
  {
    std::allocator<T>().deallocate(p, n);
  }

  template <typename U>
  bool operator==(const counting_allocator<U>& other) const noexcept
  {
    return count == other.count;
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_loop_built_with_an_allocator_makes_its_services_with_it,
    * test::threads_label())
{
  auto count = std::make_shared<std::atomic<long>>(0);
  {
    turnloop::loop l(std::allocator_arg, counting_allocator<void>(count));
    const long after_construction = count->load();
    BOOST_TEST(after_construction > 0); // the scheduler and the reactor
    BOOST_TEST(setting(l, "scheduler", "concurrency_hint") == 1);
    check_loop_runs(l); // the timer service is made on first use
    BOOST_TEST(count->load() > after_construction);
  }
}

BOOST_AUTO_TEST_CASE(a_loop_built_with_an_allocator_takes_io_contexts_concurrency_hint_form)
{
  auto count = std::make_shared<std::atomic<long>>(0);
  turnloop::loop l(std::allocator_arg, counting_allocator<void>(count), 4);
  BOOST_TEST(count->load() > 0);
  BOOST_TEST(setting(l, "scheduler", "concurrency_hint") == 1);
}

BOOST_AUTO_TEST_CASE(a_loop_built_with_an_allocator_and_a_service_maker_pins_settings,
    * test::threads_label())
{
  auto count = std::make_shared<std::atomic<long>>(0);
  turnloop::loop l(std::allocator_arg, counting_allocator<void>(count),
      asio::config_from_string("reactor.preallocated_io_objects=5"));
  BOOST_TEST(count->load() > 0);
  BOOST_TEST(setting(l, "reactor", "preallocated_io_objects") == 5);
  BOOST_TEST(setting(l, "scheduler", "locking") == 1);
  check_loop_runs(l);

  try
  {
    turnloop::loop refused(std::allocator_arg, counting_allocator<void>(count),
        asio::config_from_string("reactor.io_locking=0"));
    BOOST_FAIL("reactor.io_locking=0 was accepted");
  }
  catch (const turnloop::system_error& e)
  {
    BOOST_TEST(std::string(e.what()).find("reactor.io_locking") != std::string::npos);
  }
}

#endif // TURNLOOP_ASIO_VERSION >= 103600
