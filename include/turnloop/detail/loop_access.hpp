//
// turnloop/detail/loop_access.hpp
//
// How detail code reaches a turnloop::loop without its definition: the
// loop's engine, its shutdown, and whether an executor is the loop's own.
// Declared here, defined with the loop (loop.hpp, impl/loop.hpp), so that
// detail/ never includes loop.hpp (doc/design.md, "Where things are").
//

#ifndef TURNLOOP_DETAIL_LOOP_ACCESS_HPP
#define TURNLOOP_DETAIL_LOOP_ACCESS_HPP

#include <turnloop/detail/config.hpp>

namespace turnloop {

// Declared only: detail code passes the loop by reference to these and
// needs nothing of it complete.
class loop;

namespace detail {

class loop_core;

/// The engine of @p l, for turnloop's own services.
loop_core& core_of(loop& l) noexcept;

/// The first step of destroying @p l: marks it shutting down and shuts its
/// services down (destroying their pending operations), leaving its queues
/// and the loop itself for later. ~loop starts with it (a second call finds
/// nothing left to shut down); loop_group takes it on every loop before it
/// destroys any.
void shut_down(loop& l) noexcept;

/// True if a handler bound to @p ex may be invoked directly in a turn of
/// @p l: @p ex is that loop's own executor, possibly behind any_io_executor.
/// Anything else (a strand, another context) is dispatched to.
template <typename Executor>
bool invokes_directly(const Executor& ex, const loop& l) noexcept;

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_LOOP_ACCESS_HPP
