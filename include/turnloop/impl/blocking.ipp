//
// turnloop/impl/blocking.ipp
//

#ifndef TURNLOOP_IMPL_BLOCKING_IPP
#define TURNLOOP_IMPL_BLOCKING_IPP

#include <turnloop/blocking.hpp>

namespace turnloop {

TURNLOOP_DECL blocking_stats blocking_statistics(loop& l)
{
  blocking_stats s;
  if (boost::asio::has_service<detail::blocking_service>(l))
  {
    boost::asio::use_service<detail::blocking_service>(
        static_cast<boost::asio::execution_context&>(l)).fill_stats(s);
  }
  return s;
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_BLOCKING_IPP
