//
// turnloop/impl/blocking.ipp
//

#ifndef TURNLOOP_IMPL_BLOCKING_IPP
#define TURNLOOP_IMPL_BLOCKING_IPP

#include <turnloop/blocking.hpp>

namespace turnloop {

// detail::blocking_service's, here because the service is the loop's: it
// takes the loop its context is, and the loop's configuration.
TURNLOOP_DECL detail::blocking_service::blocking_service(
    asio::execution_context& owner)
  : asio::execution_context::service(owner),
    loop_(static_cast<loop&>(owner)),
    core_(detail::core_of(loop_)),
    config_(loop_.get_config().blocking),
    pool_(std::make_shared<blocking_pool>(core_, *this, config_)),
    jobs_(std::in_place, config_.max_undelivered),
    undelivered_(config_.max_undelivered)
{
  // Nothing outside the service may know of it yet: when two threads make
  // it at once, Asio destroys the loser without shutting it down, maybe
  // while the loop runs. It joins the loop's turns when its first job
  // starts, on the loop's thread (see start()).
}

TURNLOOP_DECL blocking_stats blocking_statistics(loop& l)
{
  blocking_stats s;
  if (asio::has_service<detail::blocking_service>(l))
  {
    asio::use_service<detail::blocking_service>(
        static_cast<asio::execution_context&>(l)).fill_stats(s);
  }
  return s;
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_BLOCKING_IPP
