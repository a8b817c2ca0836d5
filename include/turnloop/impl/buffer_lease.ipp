//
// turnloop/impl/buffer_lease.ipp
//

#ifndef TURNLOOP_IMPL_BUFFER_LEASE_IPP
#define TURNLOOP_IMPL_BUFFER_LEASE_IPP

#include <turnloop/buffer_lease.hpp>

#include <stdexcept>

namespace turnloop {

TURNLOOP_DECL void buffer_lease::resize(std::size_t n)
{
  if (n > capacity())
    throw std::length_error("turnloop::buffer_lease::resize: "
        "more bytes than the buffer holds");
  size_ = n;
}

} // namespace turnloop

#endif // TURNLOOP_IMPL_BUFFER_LEASE_IPP
