//
// turnloop/detail/pool/buffer_pool_of.hpp
//
// Finds the buffer pool of the loop behind an execution context, for a
// pooled read that has only its stream's executor to go by. Recognising a
// loop (detail::loop_of) and Asio's service registry take locks, so each
// thread remembers the last pool it found. A remembered pool is used only
// while no loop has ended since (detail::loops_ended), so a new loop that
// happens to reuse a dead loop's address is never taken for it.
//

#ifndef TURNLOOP_DETAIL_POOL_BUFFER_POOL_OF_HPP
#define TURNLOOP_DETAIL_POOL_BUFFER_POOL_OF_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/loop_of.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(execution/context.hpp)
#include TURNLOOP_ASIO_HEADER(execution_context.hpp)
#include TURNLOOP_ASIO_HEADER(query.hpp)

namespace turnloop {

class buffer_pool;
class loop;

namespace detail {

/// The pool of the loop @p ctx is (created on first use), or nullptr if
/// @p ctx is not a turnloop::loop. Any thread.
TURNLOOP_DECL buffer_pool* buffer_pool_of(
    asio::execution_context& ctx);

/// The pool of the loop that runs @p ex, or nullptr.
template <typename Executor>
buffer_pool* buffer_pool_of_executor(const Executor& ex)
{
  return buffer_pool_of(
      asio::query(ex, asio::execution::context));
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_POOL_BUFFER_POOL_OF_HPP
