//
// test/config.cpp
//

#include <turnloop/config.hpp>

#include <turnloop/loop.hpp>

#define BOOST_TEST_MODULE config
#include <boost/test/unit_test.hpp>

#include <functional>
#include <string>
#include <vector>

namespace {

struct field
{
  const char* name;
  std::function<void(turnloop::config&, std::size_t)> set;
  std::size_t min;
  std::size_t max;
};

std::vector<field> fields()
{
  const std::size_t n = turnloop::config::max_index;
  return {
    {"max_handles", [](auto& c, auto v) { c.max_handles = v; }, 1, n},
    {"max_operations", [](auto& c, auto v) { c.max_operations = v; }, 1, n},
    {"events_per_turn", [](auto& c, auto v) { c.events_per_turn = v; }, 1, 65536},
    {"pooled_buffers", [](auto& c, auto v) { c.pooled_buffers = v; }, 0, n},
    {"pooled_buffer_size",
      [](auto& c, auto v) { c.pooled_buffer_size = v; }, 1, 64u << 20},
    {"post_capacity", [](auto& c, auto v) { c.post_capacity = v; }, 1, n},
    {"blocking.threads", [](auto& c, auto v) { c.blocking.threads = v; }, 1, 1024},
    {"blocking.queue_capacity",
      [](auto& c, auto v) { c.blocking.queue_capacity = v; }, 1, n},
    {"blocking.long_threads_max",
      [](auto& c, auto v) { c.blocking.long_threads_max = v; }, 0, 65536},
    {"blocking.max_undelivered",
      [](auto& c, auto v) { c.blocking.max_undelivered = v; }, 1, n},
  };
}

std::string refusal(const turnloop::config& c)
{
  try
  {
    c.validate();
  }
  catch (const turnloop::system_error& e)
  {
    BOOST_TEST(e.code() == turnloop::error::invalid_config);
    return e.what();
  }
  return {};
}

} // namespace

BOOST_AUTO_TEST_CASE(the_defaults_are_valid_and_match_the_original)
{
  turnloop::config c;
  BOOST_TEST(refusal(c).empty());
  BOOST_TEST(c.max_handles == 1024u);
  BOOST_TEST(c.max_operations == 4096u);
  BOOST_TEST(c.events_per_turn == 256u);
  BOOST_TEST(c.pooled_buffers == 256u);
  BOOST_TEST(c.pooled_buffer_size == 16u * 1024);
  BOOST_TEST(c.post_capacity == 1024u);
  BOOST_TEST(c.blocking.threads == 4u);
  BOOST_TEST(c.blocking.queue_capacity == 1024u);
  BOOST_TEST(c.blocking.long_threads_max == 512u);
  BOOST_TEST(c.blocking.max_undelivered == 4096u);
}

BOOST_AUTO_TEST_CASE(every_field_accepts_its_bounds)
{
  for (const field& f : fields())
  {
    BOOST_TEST_CONTEXT(f.name)
    {
      turnloop::config low;
      f.set(low, f.min);
      BOOST_TEST(refusal(low).empty());
      turnloop::config high;
      f.set(high, f.max);
      BOOST_TEST(refusal(high).empty());
    }
  }
}

BOOST_AUTO_TEST_CASE(every_field_out_of_range_is_refused_by_name)
{
  for (const field& f : fields())
  {
    std::vector<std::size_t> bad{f.max + 1, std::size_t(-1)};
    if (f.min > 0)
      bad.push_back(f.min - 1);
    for (std::size_t value : bad)
    {
      BOOST_TEST_CONTEXT(f.name << " = " << value)
      {
        turnloop::config c;
        f.set(c, value);
        const std::string what = refusal(c);
        BOOST_TEST(what.find(std::string(f.name) + " is") != std::string::npos);

        turnloop::error_code ec;
        c.validate(ec);
        BOOST_TEST(ec == turnloop::error::invalid_config);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_error_code_overload_clears_on_success)
{
  turnloop::error_code ec = turnloop::error::resource_limit;
  turnloop::config().validate(ec);
  BOOST_TEST(!ec);
}

BOOST_AUTO_TEST_CASE(the_loop_constructor_refuses_an_invalid_config)
{
  turnloop::config c;
  c.events_per_turn = 0;
  try
  {
    turnloop::loop l(c);
    BOOST_FAIL("constructed a loop with events_per_turn = 0");
  }
  catch (const turnloop::system_error& e)
  {
    BOOST_TEST(e.code() == turnloop::error::invalid_config);
    BOOST_TEST(std::string(e.what()).find("events_per_turn") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(io_uring_is_refused_by_name_where_the_build_has_no_io_uring_path)
{
  // Linux with Asio's epoll reactor has turnloop's io_uring path
  // (detail/platform.hpp); anywhere else a config that requires it is
  // invalid, and says why, rather than quietly reading through the reactor.
  turnloop::config c;
  c.pooled_io = turnloop::io_path::io_uring;
  turnloop::error_code ec;
  c.validate(ec);
  if (turnloop::detail::has_io_uring_path)
  {
    BOOST_TEST(!ec);
    return;
  }
  BOOST_TEST(ec == turnloop::error::invalid_config);
  try
  {
    c.validate();
    BOOST_ERROR("validate() accepted io_path::io_uring");
  }
  catch (const turnloop::system_error& e)
  {
    BOOST_TEST(e.code() == turnloop::error::invalid_config);
    const std::string what = e.what();
    BOOST_TEST(what.find("pooled_io") != std::string::npos);
    BOOST_TEST(what.find(TURNLOOP_REACTOR_NAME) != std::string::npos);
  }
  c.pooled_io = turnloop::io_path::automatic;
  BOOST_CHECK_NO_THROW(c.validate());
}
