//
// turnloop/impl/blocking.hpp
//
// async_blocking and async_blocking_long: finding the loop behind an
// executor, and the initiation every completion token goes through.
//

#ifndef TURNLOOP_IMPL_BLOCKING_HPP
#define TURNLOOP_IMPL_BLOCKING_HPP

#include <turnloop/detail/blocking/blocking_service.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(error.hpp)
#include TURNLOOP_ASIO_HEADER(execution/context.hpp)
#include TURNLOOP_ASIO_HEADER(execution_context.hpp)
#include TURNLOOP_ASIO_HEADER(query.hpp)
#include TURNLOOP_ASIO_HEADER(strand.hpp)

#include <turnloop/detail/loop_of.hpp>

#include <concepts>
#include <utility>

namespace turnloop {
namespace detail {

/// The loop @p ex submits to: known from the type for the loop's executor
/// and strands of it, looked for behind any other executor.
/// @throws system_error (operation_not_supported) if the
/// executor's context is not a loop.
template <typename Executor>
loop& submission_loop(const Executor& ex)
{
  if constexpr (requires {
      { asio::query(ex, asio::execution::context) }
        -> std::same_as<loop&>; })
    return asio::query(ex, asio::execution::context);
  else if constexpr (requires { { ex.context() } -> std::same_as<loop&>; })
    return ex.context();
  else
  {
    if (loop* l = loop_of(asio::query(ex,
            asio::execution::context)))
      return *l;
    throw system_error(
        make_error_code(asio::error::operation_not_supported),
        "turnloop::async_blocking: the executor's context is not a "
        "turnloop::loop");
  }
}

template <typename IoExecutor>
class initiate_blocking
{
public:
  using executor_type = IoExecutor;

  initiate_blocking(loop& l, const IoExecutor& ex, bool long_job)
    : loop_(l),
      ex_(ex),
      long_job_(long_job)
  {
  }

  executor_type get_executor() const noexcept
  {
    return ex_;
  }

  template <typename Handler, typename Function>
  void operator()(Handler&& handler, Function&& function) const
  {
    asio::use_service<blocking_service>(
        static_cast<asio::execution_context&>(loop_)).submit(
          long_job_, ex_, std::forward<Handler>(handler),
          std::forward<Function>(function));
  }

private:
  loop& loop_;
  IoExecutor ex_;
  bool long_job_;
};

template <typename Executor, typename Function, typename CompletionToken>
auto initiate(loop& l, const Executor& ex, bool long_job, Function&& function,
    CompletionToken& token)
{
  check_blocking_function<Function>();
  return asio::async_initiate<CompletionToken,
         blocking_signature_t<blocking_result_t<Function>>>(
      initiate_blocking<Executor>(l, ex, long_job), token,
      std::forward<Function>(function));
}

} // namespace detail

template <blocking_executor Executor, typename Function,
    typename CompletionToken>
auto async_blocking(const Executor& ex, Function&& function,
    CompletionToken&& token)
{
  return detail::initiate(detail::submission_loop(ex), ex, false,
      std::forward<Function>(function), token);
}

template <typename Function, typename CompletionToken>
auto async_blocking(loop& l, Function&& function, CompletionToken&& token)
{
  return detail::initiate(l, l.get_executor(), false,
      std::forward<Function>(function), token);
}

template <blocking_executor Executor, typename Function,
    typename CompletionToken>
auto async_blocking_long(const Executor& ex, Function&& function,
    CompletionToken&& token)
{
  return detail::initiate(detail::submission_loop(ex), ex, true,
      std::forward<Function>(function), token);
}

template <typename Function, typename CompletionToken>
auto async_blocking_long(loop& l, Function&& function,
    CompletionToken&& token)
{
  return detail::initiate(l, l.get_executor(), true,
      std::forward<Function>(function), token);
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_BLOCKING_HPP
