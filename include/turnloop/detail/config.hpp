//
// turnloop/detail/config.hpp
//
// Build switches shared by every turnloop header.
//

#ifndef TURNLOOP_DETAIL_CONFIG_HPP
#define TURNLOOP_DETAIL_CONFIG_HPP

#include <boost/asio/detail/config.hpp>
#include <boost/asio/version.hpp>

// turnloop drives Asio's own scheduler and epoll reactor (doc/design.md,
// "Asio versions"), so it is tied to the Asio releases it is tested against.
// The gate is on BOOST_ASIO_VERSION, not BOOST_VERSION: a newer Asio may sit
// in front of an older Boost. TURNLOOP_ALLOW_UNTESTED_ASIO lets a user try an
// Asio newer than the newest tested one.
#define TURNLOOP_ASIO_OLDEST_TESTED 102600 // Asio 1.26, Boost 1.81
#define TURNLOOP_ASIO_NEWEST_TESTED 103800 // Asio 1.38, Boost 1.90

#if BOOST_ASIO_VERSION < TURNLOOP_ASIO_OLDEST_TESTED
# error "turnloop needs Boost.Asio 1.26 (Boost 1.81) or newer"
#endif // BOOST_ASIO_VERSION < TURNLOOP_ASIO_OLDEST_TESTED

#if BOOST_ASIO_VERSION > TURNLOOP_ASIO_NEWEST_TESTED \
  && !defined(TURNLOOP_ALLOW_UNTESTED_ASIO)
# error "turnloop is tested with Boost.Asio 1.26 to 1.38 (Boost 1.81 to 1.90); define TURNLOOP_ALLOW_UNTESTED_ASIO to try a newer one"
#endif // BOOST_ASIO_VERSION > TURNLOOP_ASIO_NEWEST_TESTED && ...

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
