//
// bench/support/sides.cpp
//

#include "sides.hpp"

#include <string>

namespace bench {

std::optional<side> side_named(std::string_view name) noexcept
{
  if (name == "io_context")
    return side::io_context;
  if (name == "io_context_1")
    return side::io_context_1;
  if (name == "turnloop")
    return side::turnloop;
  return std::nullopt;
}

const char* name_of(side s) noexcept
{
  switch (s)
  {
  case side::io_context:
    return "io_context";
  case side::io_context_1:
    return "io_context_1";
  case side::turnloop:
    break;
  }
  return "turnloop";
}

namespace {

// The configuration a network server would pick: many handles and
// operations, a modest buffer pool, a short cross-thread queue.
turnloop::config net_profile()
{
  turnloop::config c;
  c.max_handles = 65536;
  c.max_operations = 32768;
  c.pooled_buffers = 64;
  c.pooled_buffer_size = 16 * 1024;
  c.post_capacity = 256;
  return c;
}

} // namespace

std::optional<turnloop::config> config_named(std::string_view name)
{
  turnloop::config c = name.starts_with("net") ? net_profile() : turnloop::config();
  if (name.starts_with("pooled_"))
    c = turnloop::config();
  if (name == "default" || name == "net")
    return c;
  if (name == "net_max_handles_1")
    c.max_handles = 1;
  else if (name == "net_max_operations_1")
    c.max_operations = 1;
  else if (name == "net_pooled_buffers_0" || name == "default_pooled_buffers_0")
    c.pooled_buffers = 0;
  else if (name == "pooled_epoll")
    c.pooled_io = turnloop::io_path::epoll;
  else if (name == "pooled_io_uring")
    c.pooled_io = turnloop::io_path::io_uring;
  else if (name == "net_io_uring")
    c.pooled_io = turnloop::io_path::io_uring;
  else if (name == "net_post_capacity_1")
    c.post_capacity = 1;
  else if (name == "net_all_minimised")
  {
    c.max_handles = 1;
    c.max_operations = 1;
    c.pooled_buffers = 0;
    c.post_capacity = 1;
  }
  else
    return std::nullopt;
  return c;
}

} // namespace bench
