//
// turnloop/impl/config.ipp
//

#ifndef TURNLOOP_IMPL_CONFIG_IPP
#define TURNLOOP_IMPL_CONFIG_IPP

#include <turnloop/config.hpp>

#include <string>

namespace turnloop {
namespace detail {

struct config_check
{
  const char* field;
  std::size_t value;
  std::size_t min;
  std::size_t max;
};

// Returns the first field out of range, or nullptr.
inline const config_check* find_invalid_field(const config& c,
    config_check (&checks)[10]) noexcept
{
  const std::size_t n = config::max_index;
  checks[0] = {"max_handles", c.max_handles, 1, n};
  checks[1] = {"max_operations", c.max_operations, 1, n};
  checks[2] = {"events_per_turn", c.events_per_turn, 1, 65536};
  checks[3] = {"pooled_buffers", c.pooled_buffers, 0, n};
  checks[4] = {"pooled_buffer_size", c.pooled_buffer_size, 1, 64u << 20};
  checks[5] = {"post_capacity", c.post_capacity, 1, n};
  checks[6] = {"blocking.threads", c.blocking.threads, 1, 1024};
  checks[7] = {"blocking.queue_capacity", c.blocking.queue_capacity, 1, n};
  checks[8] = {"blocking.long_threads_max", c.blocking.long_threads_max,
    0, 65536};
  checks[9] = {"blocking.max_undelivered", c.blocking.max_undelivered, 1, n};
  for (const config_check& check : checks)
    if (check.value < check.min || check.value > check.max)
      return &check;
  return nullptr;
}

} // namespace detail

TURNLOOP_DECL void config::validate() const
{
  detail::config_check checks[10];
  if (pooled_io != io_path::automatic && pooled_io != io_path::epoll
      && pooled_io != io_path::io_uring)
  {
    throw system_error(make_error_code(error::invalid_config),
        "turnloop::config: pooled_io is not one of io_path's values");
  }
  if (pooled_io == io_path::io_uring && !detail::has_io_uring_path)
  {
    throw system_error(make_error_code(error::invalid_config),
        "turnloop::config: pooled_io is io_uring, and this build has no "
        "io_uring path: it needs Linux and Asio's epoll reactor, and this "
        "build runs on Asio's " TURNLOOP_REACTOR_NAME " (use automatic or "
        "epoll: the reactor's path)");
  }
  if (pooled_io == io_path::io_uring && pooled_buffers > 32768)
  {
    throw system_error(make_error_code(error::invalid_config),
        "turnloop::config: pooled_io is io_uring, which needs pooled_buffers"
        " of at most 32768, and pooled_buffers is "
        + std::to_string(pooled_buffers));
  }
  if (const detail::config_check* bad = detail::find_invalid_field(*this, checks))
  {
    throw system_error(make_error_code(error::invalid_config),
        "turnloop::config: " + std::string(bad->field) + " is "
        + std::to_string(bad->value) + ", must be between "
        + std::to_string(bad->min) + " and " + std::to_string(bad->max));
  }
}

TURNLOOP_DECL void config::validate(error_code& ec) const noexcept
{
  detail::config_check checks[10];
  if (detail::find_invalid_field(*this, checks)
      || (pooled_io != io_path::automatic && pooled_io != io_path::epoll
        && pooled_io != io_path::io_uring)
      || (pooled_io == io_path::io_uring
        && (!detail::has_io_uring_path || pooled_buffers > 32768)))
    ec = make_error_code(error::invalid_config);
  else
    ec.clear();
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_CONFIG_IPP
