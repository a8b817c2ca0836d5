//
// turnloop/impl/loop.hpp
//
// Template members of loop and its executor.
//

#ifndef TURNLOOP_IMPL_LOOP_HPP
#define TURNLOOP_IMPL_LOOP_HPP

#include <type_traits>
#include <utility>

namespace turnloop {

// Inline, with the handler count and the call of the scheduler's run, as
// io_context::run() is: the caller's unit compiles the run as it would
// io_context's (doc/benchmarks.md, "Each side in a file of its own").
inline loop::count_type loop::run()
{
  return core_.run();
}

namespace detail {

template <typename T>
struct is_loop_executor : std::false_type
{
};

template <typename Allocator, std::uintptr_t Bits>
struct is_loop_executor<loop::basic_executor_type<Allocator, Bits>>
  : std::true_type
{
};

// Declared in detail/loop_access.hpp.
template <typename Executor>
bool invokes_directly(const Executor& ex, const loop& l) noexcept
{
  if constexpr (is_loop_executor<Executor>::value)
    return &ex.context() == &l;
  else if constexpr (requires { ex.template target<loop::executor_type>(); })
  {
    const loop::executor_type* target =
      ex.template target<loop::executor_type>();
    return target && &target->context() == &l;
  }
  else
    return false;
}

} // namespace detail

#if TURNLOOP_ASIO_VERSION >= 103600

template <typename Allocator>
loop::loop(std::allocator_arg_t, const Allocator& a, const config& cfg)
  : loop(std::allocator_arg, a, user_asio_config_ptr(), nullptr, cfg)
{
}

template <typename Allocator>
loop::loop(std::allocator_arg_t, const Allocator& a, int)
  : loop(std::allocator_arg, a, config())
{
}

template <typename Allocator>
loop::loop(std::allocator_arg_t, const Allocator& a,
    const asio::execution_context::service_maker& initial_services,
    const config& cfg)
  : loop(std::allocator_arg, a,
      std::make_unique<detail::user_asio_config>(initial_services),
      &initial_services, cfg)
{
}

template <typename Allocator>
loop::loop(std::allocator_arg_t, const Allocator& a, user_asio_config_ptr user,
    const asio::execution_context::service_maker* initial_services,
    const config& cfg)
  : asio::io_context(std::allocator_arg, a,
      detail::pinned_asio_config_maker(user.get(), initial_services)),
    user_asio_config_(std::move(user)),
    core_(*this, cfg)
{
  core_.start();
}

#endif // TURNLOOP_ASIO_VERSION >= 103600

inline loop::executor_type loop::get_executor() noexcept
{
  return executor_type(this, std::allocator<void>(), 0);
}

template <typename Rep, typename Period>
loop::count_type loop::run_for(
    const std::chrono::duration<Rep, Period>& rel_time)
{
  return run_until(std::chrono::steady_clock::now() + rel_time);
}

template <typename Clock, typename Duration>
loop::count_type loop::run_until(
    const std::chrono::time_point<Clock, Duration>& abs_time)
{
  return core_.run_until(abs_time);
}

template <typename Rep, typename Period>
loop::count_type loop::run_one_for(
    const std::chrono::duration<Rep, Period>& rel_time)
{
  return run_one_until(std::chrono::steady_clock::now() + rel_time);
}

template <typename Clock, typename Duration>
loop::count_type loop::run_one_until(
    const std::chrono::time_point<Clock, Duration>& abs_time)
{
  return core_.run_one_until(abs_time);
}

template <typename Function>
error_code loop::try_post(Function&& f)
{
  return core_.try_post(std::forward<Function>(f));
}

template <typename Allocator, std::uintptr_t Bits>
template <typename Function>
void loop::basic_executor_type<Allocator, Bits>::execute(Function&& f) const
{
  detail::loop_core& core = context_ptr()->core_;
  if ((bits() & blocking_never) == 0 && core.runs_inline_here())
  {
    std::decay_t<Function> function(std::forward<Function>(f));
    try
    {
      std::move(function)();
    }
    catch (...)
    {
      core.capture_exception();
    }
    return;
  }
  core.post(std::forward<Function>(f), static_cast<const Allocator&>(*this));
}

template <typename Allocator, std::uintptr_t Bits>
template <typename Function, typename OtherAllocator>
void loop::basic_executor_type<Allocator, Bits>::dispatch(
    Function&& f, const OtherAllocator& a) const
{
  detail::loop_core& core = context_ptr()->core_;
  if (core.running_in_this_thread())
  {
    std::decay_t<Function> function(std::forward<Function>(f));
    std::move(function)();
    return;
  }
  core.post(std::forward<Function>(f), a);
}

template <typename Allocator, std::uintptr_t Bits>
template <typename Function, typename OtherAllocator>
void loop::basic_executor_type<Allocator, Bits>::post(
    Function&& f, const OtherAllocator& a) const
{
  context_ptr()->core_.post(std::forward<Function>(f), a);
}

template <typename Allocator, std::uintptr_t Bits>
template <typename Function, typename OtherAllocator>
void loop::basic_executor_type<Allocator, Bits>::defer(
    Function&& f, const OtherAllocator& a) const
{
  context_ptr()->core_.post(std::forward<Function>(f), a);
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_LOOP_HPP
