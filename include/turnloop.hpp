//
// turnloop.hpp
//
// Convenience header: all of turnloop.
//

#ifndef TURNLOOP_HPP
#define TURNLOOP_HPP

#include <turnloop/accept.hpp>
#include <turnloop/blocking.hpp>
#include <turnloop/blocking_stats.hpp>
#include <turnloop/buffer_lease.hpp>
#include <turnloop/buffer_pool.hpp>
#include <turnloop/buffer_pool_stats.hpp>
#include <turnloop/config.hpp>
#include <turnloop/error.hpp>
#include <turnloop/group_acceptor.hpp>
#include <turnloop/group_stats.hpp>
#include <turnloop/handle_stats.hpp>
#include <turnloop/io_objects.hpp>
#include <turnloop/loop.hpp>
#include <turnloop/loop_group.hpp>
#include <turnloop/loop_stats.hpp>
#include <turnloop/read_pooled.hpp>
#include <turnloop/sharded_acceptor.hpp>
#include <turnloop/stop_token.hpp>
#include <turnloop/switch_to.hpp>
#include <turnloop/write_lease.hpp>

#endif // TURNLOOP_HPP
