//
// turnloop/src.hpp
//
// Include this in exactly one translation unit (src/turnloop.cpp does) to
// compile turnloop's non-template functions, unless TURNLOOP_HEADER_ONLY.
//

#ifndef TURNLOOP_SRC_HPP
#define TURNLOOP_SRC_HPP

#if defined(TURNLOOP_HEADER_ONLY)
# error "Do not compile turnloop's sources with TURNLOOP_HEADER_ONLY defined"
#endif // defined(TURNLOOP_HEADER_ONLY)

#include <turnloop/impl/error.ipp>
#include <turnloop/impl/config.ipp>
#include <turnloop/detail/engine/impl/asio_config.ipp>
#include <turnloop/detail/engine/impl/loop_core.ipp>
#include <turnloop/impl/loop.ipp>
#include <turnloop/detail/blocking/impl/blocking_pool.ipp>
#include <turnloop/detail/blocking/impl/blocking_service.ipp>
#include <turnloop/impl/blocking.ipp>
#include <turnloop/impl/buffer_lease.ipp>
#include <turnloop/impl/buffer_pool.ipp>
#include <turnloop/detail/pool/impl/buffer_store.ipp>
#if defined(TURNLOOP_HAS_WINSOCK)
# include <turnloop/detail/pool/impl/descriptor_read_winsock.ipp>
#else // defined(TURNLOOP_HAS_WINSOCK)
# include <turnloop/detail/pool/impl/descriptor_read.ipp>
#endif // defined(TURNLOOP_HAS_WINSOCK)
#include <turnloop/detail/uring/impl/uring_ring.ipp>
#include <turnloop/detail/uring/impl/pool_ring.ipp>
#include <turnloop/detail/accept/impl/handle_service.ipp>
#include <turnloop/impl/accept.ipp>
#include <turnloop/impl/group_threads.ipp>
#include <turnloop/impl/loop_group.ipp>

#endif // TURNLOOP_SRC_HPP
