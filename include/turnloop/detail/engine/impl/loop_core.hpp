//
// turnloop/detail/engine/impl/loop_core.hpp
//
// Template members of loop_core.
//

#ifndef TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_HPP
#define TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_HPP

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(error.hpp)

#include <memory>
#include <type_traits>

namespace turnloop {
namespace detail {

template <typename Function, typename Allocator>
void loop_core::post(Function&& f, const Allocator& a)
{
  // Once the loop is being destroyed nothing is queued: the caller's function
  // object is destroyed without running, which is what destruction owes it.
  if (stage_.load(std::memory_order_acquire) != stage::running)
    return;

  using op_type = function_operation<std::decay_t<Function>, Allocator>;
  if (running_in_this_thread())
    post_local(op_type::create(std::forward<Function>(f), a, node_cache_, true));
  else
  {
    post_remote(op_type::create(std::forward<Function>(f), a, node_cache_,
          false), false);
  }
}

template <typename Function>
error_code loop_core::try_post(Function&& f)
{
  using op_type = function_operation<std::decay_t<Function>,
    std::allocator<void>>;

  if (stage_.load(std::memory_order_acquire) != stage::running)
    return asio::error::shut_down;

  if (running_in_this_thread())
  {
    post_local(op_type::create(std::forward<Function>(f),
          std::allocator<void>(), node_cache_, true));
    return {};
  }

  // Reserve a place below the ceiling before building anything, so a refusal
  // leaves the caller's function untouched.
  std::size_t queued = remote_.pending().load(std::memory_order_relaxed);
  do
  {
    if (queued >= config_.post_capacity)
    {
      refused_posts_.fetch_add(1, std::memory_order_relaxed);
      return make_error_code(error::resource_limit);
    }
  } while (!remote_.pending().compare_exchange_weak(queued, queued + 1,
        std::memory_order_seq_cst, std::memory_order_relaxed));
  if (queued == 0)
    scheduler_.work_started();

  operation* op;
  try
  {
    op = op_type::create(std::forward<Function>(f), std::allocator<void>(),
        node_cache_, false);
  }
  catch (...)
  {
    if (remote_.pending().fetch_sub(1, std::memory_order_acq_rel) == 1)
      scheduler_.work_finished();
    throw;
  }
  post_remote(op, true);
  return {};
}

template <typename Clock, typename Duration>
std::size_t loop_core::run_until(
    const std::chrono::time_point<Clock, Duration>& t)
{
  run_scope scope(*this);
  std::size_t n = 0;
  for (;;)
  {
    // As io_context's: only the deadline, a stop or the end of work ends
    // the call, which is when run_one_until returns 0 (it keeps waiting
    // while it runs only the reactor, even if the reactor step completed
    // I/O). A turn that ran no handler is not one of them.
    const progress before = progress_now();
    const std::size_t ops = owner_.io_context::run_one_until(t);
    n += handlers_since(ops, before);
    if (ops == 0)
      return n;
  }
}

template <typename Clock, typename Duration>
std::size_t loop_core::run_one_until(
    const std::chrono::time_point<Clock, Duration>& t)
{
  run_scope scope(*this);
  limit_scope limit(*this, 1);
  for (;;)
  {
    const progress before = progress_now();
    const std::size_t ops = owner_.io_context::run_one_until(t);
    if (ops == 0)
      return 0;
    if (handlers_since(ops, before) != 0)
      return 1;
  }
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_IMPL_LOOP_CORE_HPP
