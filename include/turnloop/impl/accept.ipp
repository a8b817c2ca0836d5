//
// turnloop/impl/accept.ipp
//

#ifndef TURNLOOP_IMPL_ACCEPT_IPP
#define TURNLOOP_IMPL_ACCEPT_IPP

#include <turnloop/accept.hpp>

namespace turnloop {

TURNLOOP_DECL handle_stats handle_statistics(loop& l)
{
  const detail::ceiling& handles = detail::core_of(l).handles();
  handle_stats s;
  s.limit = handles.limit();
  s.in_use = handles.in_use();
  s.high_water = handles.high_water();
  // The service exists from the first accept; before it, nothing waited.
  if (asio::has_service<detail::handle_service>(l))
    asio::use_service<detail::handle_service>(l).fill_stats(s);
  return s;
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_ACCEPT_IPP
