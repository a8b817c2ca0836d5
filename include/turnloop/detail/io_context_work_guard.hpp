//
// turnloop/detail/io_context_work_guard.hpp
//
// executor_work_guard for the loop's executor, which also converts to
// io_context's guard, so `executor_work_guard<io_context::executor_type> w =
// make_work_guard(loop);` compiles and holds the loop's work. Asio's own
// guard for an execution::executor, plus that conversion; an explicit
// specialisation is the only way to give a class template's result a
// conversion, and must be seen before any use, hence its place at the end of
// turnloop/loop.hpp.
//

#ifndef TURNLOOP_DETAIL_IO_CONTEXT_WORK_GUARD_HPP
#define TURNLOOP_DETAIL_IO_CONTEXT_WORK_GUARD_HPP

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(execution/outstanding_work.hpp)
#include TURNLOOP_ASIO_HEADER(executor_work_guard.hpp)
#include TURNLOOP_ASIO_HEADER(io_context.hpp)
#include TURNLOOP_ASIO_HEADER(prefer.hpp)

#include <optional>
#include <utility>

TURNLOOP_ASIO_NAMESPACE_BEGIN

/// Keeps a turnloop::loop's run() from running out of work while it owns
/// work, like io_context's guard. Not thread-safe, as Asio's is not.
template <>
class executor_work_guard<turnloop::loop::executor_type, void, void>
{
public:
  using executor_type = turnloop::loop::executor_type;

  explicit executor_work_guard(const executor_type& e) noexcept
    : executor_(e),
      work_(asio::prefer(e, execution::outstanding_work.tracked))
  {
  }

  executor_work_guard(const executor_work_guard& other) noexcept = default;

  executor_work_guard(executor_work_guard&& other) noexcept
    : executor_(other.executor_),
      work_(std::move(other.work_))
  {
    other.work_.reset();
  }

  executor_work_guard& operator=(const executor_work_guard&) = delete;

  executor_type get_executor() const noexcept
  {
    return executor_;
  }

  bool owns_work() const noexcept
  {
    return work_.has_value();
  }

  void reset() noexcept
  {
    work_.reset();
  }

  /// io_context's guard for the same loop, owning its own work if this one
  /// owns work (this one keeps its own until it is destroyed or reset).
  operator executor_work_guard<io_context::executor_type>() const noexcept
  {
    executor_work_guard<io_context::executor_type> guard(
        static_cast<io_context::executor_type>(executor_));
    if (!owns_work())
      guard.reset();
    return guard;
  }

private:
  using work_type = decltype(asio::prefer(
      std::declval<const executor_type&>(), execution::outstanding_work.tracked));

  executor_type executor_;
  std::optional<work_type> work_;
};

TURNLOOP_ASIO_NAMESPACE_END

#endif // TURNLOOP_DETAIL_IO_CONTEXT_WORK_GUARD_HPP
