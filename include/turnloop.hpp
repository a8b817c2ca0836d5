//
// turnloop.hpp
//
// Convenience header: all of turnloop.
//

#ifndef TURNLOOP_HPP
#define TURNLOOP_HPP

#include <turnloop/accept.hpp>
#include <turnloop/config.hpp>
#include <turnloop/error.hpp>
#include <turnloop/handle_stats.hpp>
#include <turnloop/loop.hpp>
#include <turnloop/loop_stats.hpp>

#endif // TURNLOOP_HPP
