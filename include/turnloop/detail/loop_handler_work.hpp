//
// turnloop/detail/loop_handler_work.hpp
//
// How an Asio operation of an I/O object typed on a loop's executor
// (turnloop::steady_timer, turnloop::ip::tcp::socket, ...) reaches its
// handler: as an operation of an object typed on io_context's own executor
// does, with no tracked copy of the executor and the handler called in
// place. Asio decides that in detail::handler_work_base, which calls the
// handler directly only for io_context::executor_type (its "native
// implementation"); for every other executor it keeps a tracked copy for
// the operation's lifetime and completes through execute(), which on a
// loop costs a unit of work taken and given back, a second tracked copy
// with the handler's allocator, and the inline-or-queue decision
// (1208 against 1042 instructions a zero-delay timer, callgrind, Asio 1.26).
//
// Why the shortcut holds for a loop as it does for io_context:
// - An operation of an I/O object typed on a loop's executor is an
//   operation of that loop's own scheduler (the object's service lives in
//   the executor's context), which counts it as work until it completes:
//   the tracked copy adds nothing.
// - Its completion runs where the loop's scheduler runs operations: with
//   loop::run(), on the loop's thread, in the reactor step of its turn. An
//   exception the handler throws leaves run(), as from io_context. Driven
//   through its io_context base (io_context::run()), the loop's scheduler
//   runs it on the thread that calls that, as it runs the completions of
//   objects typed on io_context::executor_type: there, unlike an
//   any_io_executor's, such a handler is not queued for the loop's turn
//   (doc/compatibility.md). A check of the thread at each completion,
//   though a few instructions, kept GCC 12 from inlining a composed
//   operation's step into it (170 instructions a ping-pong round trip).
// - turnloop's own operations that wait outside the scheduler (a lease
//   waiting for a buffer, an accept waiting for a handle) hold the loop's
//   work themselves (detail/loop_operation_work.hpp, specialised below).
//
// A handler with an executor of its own (bound with bind_executor, a
// coroutine's) beside the object's: when that executor is the same loop
// with blocking.possibly and the object's needs no work, the handler is
// called in place as well (Asio's rule for two equal any_io_executors);
// otherwise, as Asio does, a tracked copy and execute(). Partial
// specialisations of Asio's template, as io_context's own is one; seen
// wherever loop::basic_executor_type is (the end of turnloop/loop.hpp).
//

#ifndef TURNLOOP_DETAIL_LOOP_HANDLER_WORK_HPP
#define TURNLOOP_DETAIL_LOOP_HANDLER_WORK_HPP

#include <turnloop/detail/loop_operation_work.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(associated_allocator.hpp)
#include TURNLOOP_ASIO_HEADER(detail/handler_work.hpp)
#include TURNLOOP_ASIO_HEADER(execution/allocator.hpp)
#include TURNLOOP_ASIO_HEADER(execution/blocking.hpp)
#include TURNLOOP_ASIO_HEADER(execution/context.hpp)
#include TURNLOOP_ASIO_HEADER(execution/outstanding_work.hpp)
#include TURNLOOP_ASIO_HEADER(prefer.hpp)
#include TURNLOOP_ASIO_HEADER(query.hpp)

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

TURNLOOP_ASIO_NAMESPACE_BEGIN
namespace detail {

/// The I/O object's own executor: nothing to hold and nothing to decide
/// (see above). Empty, as io_context's, so that the completion is the
/// handler's call and nothing else.
template <typename Allocator, std::uintptr_t Bits, typename IoContext,
    typename PolymorphicExecutor>
class handler_work_base<turnloop::loop::basic_executor_type<Allocator, Bits>,
    void, IoContext, PolymorphicExecutor, void>
{
public:
  explicit handler_work_base(int, int,
      const turnloop::loop::basic_executor_type<Allocator, Bits>&) noexcept
  {
  }

  static constexpr bool owns_work() noexcept
  {
    return false;
  }

  template <typename Function, typename Handler>
  void dispatch(Function& function, Handler&)
  {
    static_cast<Function&&>(function)();
  }
};

/// The handler's own executor, a loop's, beside the I/O object's.
template <typename Allocator, std::uintptr_t Bits, typename CandidateExecutor,
    typename IoContext, typename PolymorphicExecutor>
class handler_work_base<turnloop::loop::basic_executor_type<Allocator, Bits>,
    CandidateExecutor, IoContext, PolymorphicExecutor, void>
{
  using loop_executor = turnloop::loop::basic_executor_type<Allocator, Bits>;
  using tracked_executor = std::decay_t<decltype(asio::prefer(
      std::declval<const loop_executor&>(),
      execution::outstanding_work.tracked))>;

public:
  /// @p ex is the handler's executor, @p candidate the I/O object's.
  handler_work_base(bool base1_owns_work, const loop_executor& ex,
      const CandidateExecutor& candidate) noexcept
  {
    if (base1_owns_work || !runs_in_place(ex, candidate))
      work_.emplace(asio::prefer(ex, execution::outstanding_work.tracked));
  }

  bool owns_work() const noexcept
  {
    return work_.has_value();
  }

  /// Called when either base owns work, and then this one does: its
  /// constructor takes work whenever the object's base holds some.
  template <typename Function, typename Handler>
  void dispatch(Function& function, Handler& handler)
  {
    asio::prefer(*work_,
        execution::allocator((get_associated_allocator)(handler))
      ).execute(static_cast<Function&&>(function));
  }

private:
  // The handler's executor is the loop whose scheduler runs the object's
  // operations, and lets a handler run inline.
  static bool runs_in_place(const loop_executor& ex,
      const CandidateExecutor& candidate) noexcept
  {
    if constexpr (can_query<const CandidateExecutor&,
        execution::context_t>::value)
    {
      const execution_context& context_of_object =
        asio::query(candidate, execution::context);
      return static_cast<const execution_context*>(&ex.context())
          == &context_of_object
        && asio::query(ex, execution::blocking) != execution::blocking.never;
    }
    else
      return false;
  }

  std::optional<tracked_executor> work_;
};

} // namespace detail
TURNLOOP_ASIO_NAMESPACE_END

namespace turnloop {
namespace detail {

/// A tracked copy of the loop's executor (detail/loop_operation_work.hpp).
template <typename Allocator, std::uintptr_t Bits>
class loop_operation_work<loop::basic_executor_type<Allocator, Bits>>
{
  using executor_type = loop::basic_executor_type<Allocator, Bits>;

public:
  explicit loop_operation_work(const executor_type& ex) noexcept
    : work_(asio::prefer(ex, asio::execution::outstanding_work.tracked))
  {
  }

private:
  std::decay_t<decltype(asio::prefer(std::declval<const executor_type&>(),
      asio::execution::outstanding_work.tracked))> work_;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_LOOP_HANDLER_WORK_HPP
