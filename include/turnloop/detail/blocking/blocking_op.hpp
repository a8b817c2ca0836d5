//
// turnloop/detail/blocking/blocking_op.hpp
//
// The typed body of a blocking job: the function, its result or exception,
// the stop source a running function may watch, and the completion handler
// with what it needs to be invoked where Asio says it must.
//
// Memory comes from the handler's associated allocator (Asio's per-thread
// recycling allocator by default) and is freed on the loop's thread before
// the handler is invoked, as Asio's own operations do.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_BLOCKING_OP_HPP
#define TURNLOOP_DETAIL_BLOCKING_BLOCKING_OP_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/blocking/blocking_job.hpp>
#include <turnloop/detail/blocking/blocking_traits.hpp>
#include <turnloop/detail/foreign_delivery.hpp>
#include <turnloop/error.hpp>
#include <turnloop/detail/loop_access.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(associated_allocator.hpp)
#include TURNLOOP_ASIO_HEADER(associated_cancellation_slot.hpp)
#include TURNLOOP_ASIO_HEADER(associated_executor.hpp)
#include TURNLOOP_ASIO_HEADER(error.hpp)
#include TURNLOOP_ASIO_HEADER(recycling_allocator.hpp)

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace turnloop {
namespace detail {

struct no_stop_source
{
};

template <typename Function, typename Handler, typename IoExecutor>
class blocking_op final : public blocking_job
{
public:
  using result_type = blocking_result_t<Function>;
  using handler_executor =
    asio::associated_executor_t<Handler, IoExecutor>;

  /// Allocates and constructs a job, and for a handler bound elsewhere the
  /// delivery of its completion; throws what allocation or the moves throw,
  /// leaving @p handler and @p function untouched on bad_alloc.
  template <typename H, typename F>
  static blocking_op* create(H&& handler, F&& function,
      const IoExecutor& io_ex, loop& l)
  {
    op_allocator alloc(allocator_of(handler));
    blocking_op* op = std::allocator_traits<op_allocator>::allocate(alloc, 1);
    try
    {
      // A handler bound elsewhere keeps its executor's work (the
      // reservation holds it); one run directly on the loop is covered by
      // the unit the service holds on the loop.
      std::optional<reservation> reserved;
      handler_executor ex = asio::get_associated_executor(handler, io_ex);
      if (!invokes_directly(ex, l))
        reserved.emplace(core_of(l), handler, ex);
      return ::new (static_cast<void*>(op)) blocking_op(
          std::forward<H>(handler), std::forward<F>(function),
          std::move(reserved));
    }
    catch (...)
    {
      std::allocator_traits<op_allocator>::deallocate(alloc, op, 1);
      throw;
    }
  }

  Handler& handler() noexcept
  {
    return handler_;
  }

  /// The completion of a refused submission, resource_limit, to be posted
  /// to the loop (see later_completion).
  static auto refusal(loop& l, const IoExecutor& io_ex, Handler&& handler)
  {
    const error_code ec = make_error_code(error::resource_limit);
    if constexpr (std::is_void_v<result_type>)
      return make_later_completion(l, io_ex, std::move(handler), ec,
          std::exception_ptr());
    else
    {
      return make_later_completion(l, io_ex, std::move(handler), ec,
          std::exception_ptr(), result_type());
    }
  }

private:
  using handler_allocator = asio::associated_allocator_t<Handler,
        asio::recycling_allocator<void>>;
  using op_allocator = typename std::allocator_traits<handler_allocator>::
    template rebind_alloc<blocking_op>;
  using stored_result = std::conditional_t<std::is_void_v<result_type>,
        std::monostate, result_type>;
  using stop_type = std::conditional_t<takes_stop_token<Function>,
        stop_source, no_stop_source>;
  using reservation = std::conditional_t<std::is_void_v<result_type>,
        reserved_delivery<Handler, handler_executor,
          error_code, std::exception_ptr>,
        reserved_delivery<Handler, handler_executor,
          error_code, std::exception_ptr, result_type>>;

  template <typename H, typename F>
  blocking_op(H&& handler, F&& function,
      std::optional<reservation>&& reserved)
    : blocking_job(functions),
      function_(std::in_place, std::forward<F>(function)),
      handler_(std::forward<H>(handler)),
      reserved_(std::move(reserved))
  {
  }

  template <typename H>
  static handler_allocator allocator_of(const H& handler) noexcept
  {
    return asio::get_associated_allocator(handler,
        asio::recycling_allocator<void>());
  }

  static void free(blocking_op* op, const handler_allocator& a) noexcept
  {
    op_allocator alloc(a);
    op->~blocking_op();
    std::allocator_traits<op_allocator>::deallocate(alloc, op, 1);
  }

  result_type call()
  {
    if constexpr (takes_stop_token<Function>)
      return std::invoke(std::move(*function_), stop_.get_token());
    else
      return std::invoke(std::move(*function_));
  }

  static void do_run(blocking_job* base) noexcept
  {
    blocking_op* op = static_cast<blocking_op*>(base);
    try
    {
      if constexpr (std::is_void_v<result_type>)
      {
        op->call();
        op->result_.emplace();
      }
      else
        op->result_.emplace(op->call());
    }
    catch (...)
    {
      op->exception_ = std::current_exception();
    }
    // What the function holds is released on the thread that ran it.
    op->function_.reset();
  }

  static void do_complete(blocking_job* base)
  {
    blocking_op* op = static_cast<blocking_op*>(base);
    error_code ec;
    if (op->state_ == state::aborted)
      ec = asio::error::operation_aborted;
    else if (op->state_ == state::refused)
      ec = make_error_code(error::resource_limit);
    else if (op->state_ == state::no_memory)
      ec = asio::error::no_memory;

    // Cleared while the handler, which may own the signal, is alive.
    auto slot = asio::get_associated_cancellation_slot(op->handler_);
    if (slot.is_connected())
      slot.clear();

    Handler handler(std::move(op->handler_));
    std::exception_ptr exception(std::move(op->exception_));
    stored_result result(op->result_
        ? std::move(*op->result_) : stored_result());
    std::optional<reservation> reserved(std::move(op->reserved_));
    free(op, allocator_of(handler));

    // Invoked in this turn, or delivered through its own executor by way
    // of the memory reserved at submission (see foreign_delivery.hpp).
    if constexpr (std::is_void_v<result_type>)
    {
      if (!reserved)
        std::move(handler)(ec, std::move(exception));
      else
        reserved->deliver(std::move(handler), ec, std::move(exception));
    }
    else
    {
      if (!reserved)
        std::move(handler)(ec, std::move(exception), std::move(result));
      else
      {
        reserved->deliver(std::move(handler), ec, std::move(exception),
            std::move(result));
      }
    }
  }

  static void do_destroy(blocking_job* base) noexcept
  {
    blocking_op* op = static_cast<blocking_op*>(base);
    free(op, allocator_of(op->handler_));
  }

  static void do_request_stop(blocking_job* base) noexcept
  {
    if constexpr (takes_stop_token<Function>)
      static_cast<blocking_op*>(base)->stop_.request_stop();
  }

  static constexpr function_table functions{
    &blocking_op::do_run, &blocking_op::do_complete, &blocking_op::do_destroy,
    &blocking_op::do_request_stop};

  std::optional<Function> function_;
  [[no_unique_address]] stop_type stop_;
  std::optional<stored_result> result_;
  std::exception_ptr exception_;
  Handler handler_;
  std::optional<reservation> reserved_;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_BLOCKING_OP_HPP
