//
// turnloop/detail/blocking/impl/blocking_service.hpp
//
// Submission, the one template member of blocking_service.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_SERVICE_HPP
#define TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_SERVICE_HPP

#include <turnloop/detail/blocking/blocking_op.hpp>
#include <turnloop/detail/remote_refusal.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(associated_cancellation_slot.hpp)

#include <memory>
#include <type_traits>
#include <utility>

namespace turnloop {
namespace detail {

template <typename Handler, typename Function, typename IoExecutor>
void blocking_service::submit(bool long_job, const IoExecutor& io_ex,
    Handler&& handler, Function&& function)
{
  using handler_type = std::decay_t<Handler>;
  using function_type = std::decay_t<Function>;
  using op_type = blocking_op<function_type, handler_type, IoExecutor>;

  // Made during the loop's destruction (a destructor of a handler it
  // destroys): dropped, the handler destroyed unrun with the caller's copy,
  // as a post then is.
  if (core_.being_destroyed())
    return;

  const bool on_loop = core_.running_in_this_thread();
  if (admit(long_job, on_loop))
  {
    auto refusal = op_type::refusal(loop_, io_ex,
        handler_type(std::forward<Handler>(handler)));
    if (on_loop)
      core_.post(std::move(refusal), std::allocator<void>());
    else
    {
      post_remote_refusal(core_, std::move(refusal),
          "turnloop::async_blocking: refused off the loop's thread while "
          "config::post_capacity refusals wait for the loop");
    }
    return;
  }

  op_type* op;
  try
  {
    op = op_type::create(std::forward<Handler>(handler),
        std::forward<Function>(function), io_ex, loop_);
  }
  catch (...)
  {
    unadmit(long_job);
    throw;
  }

  if (on_loop)
  {
    adopt(op, long_job, false);
    return;
  }
  // Admitted here; recorded and started in the loop's turn. The post is not
  // refusable, but bounded: every forwarded job holds a credit.
  core_.post([forwarded = forwarded_job(*this, op, long_job), long_job,
        this]() mutable
      {
        adopt(static_cast<op_type*>(forwarded.release()), long_job, true);
      }, std::allocator<void>());
}

template <typename Op>
void blocking_service::adopt(Op* op, bool long_job, bool from_elsewhere)
{
  slot_id id;
  try
  {
    id = hold(op);
    auto slot = asio::get_associated_cancellation_slot(op->handler());
    if (slot.is_connected())
    {
      try
      {
        slot.template emplace<cancellation>(*this, id);
      }
      catch (...)
      {
        (void)jobs_->find(id)->release(); // still the caller's
        jobs_->erase(id);
        throw;
      }
    }
  }
  catch (...)
  {
    if (from_elsewhere)
    {
      // Nothing accepted is lost: its handler learns why in this turn.
      op->state_ = blocking_job::state::no_memory;
      end_unrecorded(op, long_job);
      return;
    }
    unadmit(long_job);
    op->destroy();
    throw;
  }
  start(op, long_job);
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_SERVICE_HPP
