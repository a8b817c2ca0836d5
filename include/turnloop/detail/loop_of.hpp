//
// turnloop/detail/loop_of.hpp
//
// Finds the turnloop::loop behind an execution context or an I/O object's
// executor, for the services that only a loop has (the buffer pool).
//
// Asio's execution_context is not polymorphic, so a loop is recognised by
// its reactor, which only a loop installs; executors that name the loop
// directly (the loop's own, or an any_io_executor holding it) take a short
// cut that costs no service lookup.
//

#ifndef TURNLOOP_DETAIL_LOOP_OF_HPP
#define TURNLOOP_DETAIL_LOOP_OF_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/loop.hpp>

#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>

#include <type_traits>

namespace turnloop {
namespace detail {

/// The loop @p ctx is, or nullptr if it is another kind of context.
TURNLOOP_DECL loop* loop_of(boost::asio::execution_context& ctx);

/// The loop whose executor @p ex is (or wraps), or nullptr.
template <typename Executor>
loop* loop_of_executor(const Executor& ex)
{
  if constexpr (std::is_same_v<Executor, loop::executor_type>)
    return &ex.context();
  else
  {
    if constexpr (requires { ex.template target<loop::executor_type>(); })
      if (const loop::executor_type* e =
          ex.template target<loop::executor_type>())
        return &e->context();
    boost::asio::execution_context& ctx =
      boost::asio::query(ex, boost::asio::execution::context);
    return loop_of(ctx);
  }
}

} // namespace detail
} // namespace turnloop

#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/detail/impl/loop_of.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_DETAIL_LOOP_OF_HPP
