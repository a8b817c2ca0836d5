//
// turnloop/detail/loop_operation_work.hpp
//
// The loop's work, held by one of turnloop's own operations while it waits
// outside the scheduler (a lease for a buffer, an accept for a handle).
// Asio's handler_work holds none for an I/O object typed on a loop's
// executor, whose operations the loop's scheduler counts itself
// (detail/loop_handler_work.hpp, which specialises this template for the
// loop's executors: a tracked copy). For any other executor it holds
// nothing: Asio's handler_work holds what that one needs.
//

#ifndef TURNLOOP_DETAIL_LOOP_OPERATION_WORK_HPP
#define TURNLOOP_DETAIL_LOOP_OPERATION_WORK_HPP

namespace turnloop {
namespace detail {

template <typename Executor>
class loop_operation_work
{
public:
  explicit loop_operation_work(const Executor&) noexcept
  {
  }
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_LOOP_OPERATION_WORK_HPP
