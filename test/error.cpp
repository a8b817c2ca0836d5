//
// test/error.cpp
//

#include <turnloop/error.hpp>

#define BOOST_TEST_MODULE error
#include <boost/test/unit_test.hpp>

#include <system_error>

BOOST_AUTO_TEST_CASE(the_category_is_named_turnloop)
{
  BOOST_TEST(turnloop::error_category().name() == std::string("turnloop"));
}

BOOST_AUTO_TEST_CASE(every_error_has_its_own_message)
{
  const auto limit = make_error_code(turnloop::error::resource_limit);
  const auto config = make_error_code(turnloop::error::invalid_config);
  const auto running = make_error_code(turnloop::error::already_running);
  BOOST_TEST(limit.message() != config.message());
  BOOST_TEST(config.message() != running.message());
  BOOST_TEST(limit.message().find("ceiling") != std::string::npos);
  BOOST_TEST(make_error_code(static_cast<turnloop::error>(99)).message()
      == "unknown turnloop error");
}

BOOST_AUTO_TEST_CASE(the_enum_converts_to_boost_and_std_error_codes)
{
  turnloop::error_code ec = turnloop::error::resource_limit;
  BOOST_TEST(ec == turnloop::error::resource_limit);
  BOOST_TEST(ec != turnloop::error::invalid_config);
  BOOST_TEST(&ec.category() == &turnloop::error_category());

  std::error_code std_ec = turnloop::error::invalid_config;
  BOOST_TEST(std_ec.value() == static_cast<int>(turnloop::error::invalid_config));
  BOOST_TEST(std_ec.category().name() == std::string("turnloop"));
}

BOOST_AUTO_TEST_CASE(a_system_error_carries_the_code)
{
  try
  {
    throw turnloop::system_error(turnloop::error::already_running);
  }
  catch (const turnloop::system_error& e)
  {
    BOOST_TEST(e.code() == turnloop::error::already_running);
  }
}
