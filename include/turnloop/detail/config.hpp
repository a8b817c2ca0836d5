//
// turnloop/detail/config.hpp
//
// Build switches shared by every turnloop header.
//

#ifndef TURNLOOP_DETAIL_CONFIG_HPP
#define TURNLOOP_DETAIL_CONFIG_HPP

#include <boost/asio/detail/config.hpp>
#include <boost/version.hpp>

// turnloop drives Asio's own scheduler and reactor (see doc/design.md), so it
// is tied to the Asio release it was written against and to the epoll reactor.
#if BOOST_VERSION < 108100 || BOOST_VERSION >= 108700
# error "turnloop supports Boost 1.81 to 1.86 (Asio's scheduler changed in 1.87)"
#endif // BOOST_VERSION < 108100 || BOOST_VERSION >= 108700

#if !defined(BOOST_ASIO_HAS_EPOLL) || defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
# error "turnloop requires Asio's epoll reactor (Linux, without io_uring as default)"
#endif // !defined(BOOST_ASIO_HAS_EPOLL) || defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)

// TURNLOOP_HEADER_ONLY: define it to use turnloop without linking
// src/turnloop.cpp; every non-template function is then inline.
#if defined(TURNLOOP_HEADER_ONLY)
# define TURNLOOP_DECL inline
#else // defined(TURNLOOP_HEADER_ONLY)
# define TURNLOOP_DECL
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_DETAIL_CONFIG_HPP
