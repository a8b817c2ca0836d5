//
// turnloop/detail/blocking/impl/blocking_service.hpp
//
// Submission, the one template member of blocking_service.
//

#ifndef TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_SERVICE_HPP
#define TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_SERVICE_HPP

#include <turnloop/detail/blocking/blocking_op.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

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

  if (!core_.running_in_this_thread())
  {
    boost::asio::post(loop_.get_executor(),
        [this, long_job, io_ex,
          handler = handler_type(std::forward<Handler>(handler)),
          function = function_type(std::forward<Function>(function))]()
        mutable
        {
          submit(long_job, io_ex, std::move(handler), std::move(function));
        });
    return;
  }

  if (admit(long_job))
  {
    op_type::post_refusal(io_ex, std::forward<Handler>(handler));
    return;
  }

  blocking_job* job;
  slot_id id;
  try
  {
    job = op_type::create(std::forward<Handler>(handler),
        std::forward<Function>(function), io_ex, loop_);
    id = hold(job); // destroys the job if it throws
  }
  catch (...)
  {
    unadmit();
    throw;
  }

  auto slot = boost::asio::get_associated_cancellation_slot(
      static_cast<op_type*>(job)->handler());
  if (slot.is_connected())
  {
    try
    {
      slot.template emplace<cancellation>(*this, id);
    }
    catch (...)
    {
      jobs_->erase(id);
      unadmit();
      throw;
    }
  }
  start(job, long_job);
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_BLOCKING_IMPL_BLOCKING_SERVICE_HPP
