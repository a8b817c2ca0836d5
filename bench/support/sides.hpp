//
// bench/support/sides.hpp
//
// The three sides every workload runs on. A workload is a template over a
// "maker" (a callable returning a fresh context), so all three run the same
// code and only the context differs. Which maker a run gets is decided by
// bench::on_each_side (driver.hpp), in the translation unit of its side.
//

#ifndef TURNLOOP_BENCH_SUPPORT_SIDES_HPP
#define TURNLOOP_BENCH_SUPPORT_SIDES_HPP

#include <turnloop/loop.hpp>

#include <turnloop/asio.hpp>

#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>

namespace net = turnloop::asio; // Boost.Asio, or standalone Asio

namespace bench {

enum class side
{
  io_context,   // asio::io_context, default constructor
  io_context_1, // asio::io_context(1): concurrency hint 1
  turnloop      // turnloop::loop
};

std::optional<side> side_named(std::string_view name) noexcept;
const char* name_of(side s) noexcept;

/// turnloop configurations the memory rows compare; empty if unknown.
/// Names: default, net, net_max_handles_1, net_max_operations_1,
/// net_pooled_buffers_0, net_post_capacity_1, net_all_minimised,
/// default_pooled_buffers_0; pooled_epoll and pooled_io_uring (the default
/// configuration with config::pooled_io set).
std::optional<turnloop::config> config_named(std::string_view name);

struct io_context_maker
{
  using context_type = net::io_context;

  std::unique_ptr<context_type> operator()() const
  {
    return std::make_unique<context_type>();
  }
};

struct io_context_1_maker
{
  using context_type = net::io_context;

  std::unique_ptr<context_type> operator()() const
  {
    return std::make_unique<context_type>(1);
  }
};

struct turnloop_maker
{
  using context_type = turnloop::loop;

  turnloop::config config;

  std::unique_ptr<context_type> operator()() const
  {
    return std::make_unique<context_type>(config);
  }
};

template <typename Maker>
inline constexpr bool is_turnloop =
  std::is_same_v<typename Maker::context_type, turnloop::loop>;

} // namespace bench

#endif // TURNLOOP_BENCH_SUPPORT_SIDES_HPP
