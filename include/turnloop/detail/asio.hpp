//
// turnloop/detail/asio.hpp
//
// The one place that spells the Asio turnloop runs on: Boost.Asio (the
// default) or standalone Asio (TURNLOOP_STANDALONE_ASIO defined, as the
// CMake option of that name and its turnloop.pc do for their users). Every
// other file names turnloop::asio, turnloop::error_code,
// turnloop::system_error and the TURNLOOP_ASIO_* macros below, and includes
// Asio's headers as TURNLOOP_ASIO_HEADER(name): in standalone mode no
// turnloop header includes anything under boost/.
//

#ifndef TURNLOOP_DETAIL_ASIO_HPP
#define TURNLOOP_DETAIL_ASIO_HPP

// The flavour's base: its version and configuration macros and its error
// code. Everything else a header needs from Asio it includes itself,
// spelled TURNLOOP_ASIO_HEADER(name): <asio/name> or <boost/asio/name>.
#if defined(TURNLOOP_STANDALONE_ASIO)
# define TURNLOOP_ASIO_HEADER(name) <asio/name>
# include <asio/version.hpp>
# include <asio/detail/config.hpp>
# include <asio/error_code.hpp>
# include <asio/system_error.hpp>
# include <system_error>
#else // defined(TURNLOOP_STANDALONE_ASIO)
# define TURNLOOP_ASIO_HEADER(name) <boost/asio/name>
# include <boost/asio/version.hpp>
# include <boost/asio/detail/config.hpp>
# include <boost/system/error_code.hpp>
# include <boost/system/system_error.hpp>
#endif // defined(TURNLOOP_STANDALONE_ASIO)

#include <type_traits>

// What turnloop reads of Asio's configuration, whichever the spelling; and
// the header that includes the whole of it (turnloop/asio.hpp's).
#if defined(TURNLOOP_STANDALONE_ASIO)
# define TURNLOOP_ASIO_WHOLE <asio.hpp>
# define TURNLOOP_ASIO_VERSION ASIO_VERSION
# define TURNLOOP_ASIO_DEFINE_HANDLER_PTR ASIO_DEFINE_HANDLER_PTR
# if defined(ASIO_HAS_EPOLL)
#  define TURNLOOP_ASIO_HAS_EPOLL 1
# endif // defined(ASIO_HAS_EPOLL)
# if defined(ASIO_HAS_IO_URING_AS_DEFAULT)
#  define TURNLOOP_ASIO_HAS_IO_URING_AS_DEFAULT 1
# endif // defined(ASIO_HAS_IO_URING_AS_DEFAULT)
# if defined(ASIO_HAS_LOCAL_SOCKETS)
#  define TURNLOOP_ASIO_HAS_LOCAL_SOCKETS 1
# endif // defined(ASIO_HAS_LOCAL_SOCKETS)
# if defined(ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
#  define TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR 1
# endif // defined(ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
# if defined(ASIO_HAS_KQUEUE)
#  define TURNLOOP_ASIO_HAS_KQUEUE 1
# endif // defined(ASIO_HAS_KQUEUE)
# if defined(ASIO_HAS_DEV_POLL)
#  define TURNLOOP_ASIO_HAS_DEV_POLL 1
# endif // defined(ASIO_HAS_DEV_POLL)
# if defined(ASIO_HAS_IOCP)
#  define TURNLOOP_ASIO_HAS_IOCP 1
# endif // defined(ASIO_HAS_IOCP)
# if defined(ASIO_WINDOWS_RUNTIME)
#  define TURNLOOP_ASIO_WINDOWS_RUNTIME 1
# endif // defined(ASIO_WINDOWS_RUNTIME)
#else // defined(TURNLOOP_STANDALONE_ASIO)
# define TURNLOOP_ASIO_WHOLE <boost/asio.hpp>
# define TURNLOOP_ASIO_VERSION BOOST_ASIO_VERSION
# define TURNLOOP_ASIO_DEFINE_HANDLER_PTR BOOST_ASIO_DEFINE_HANDLER_PTR
# if defined(BOOST_ASIO_HAS_EPOLL)
#  define TURNLOOP_ASIO_HAS_EPOLL 1
# endif // defined(BOOST_ASIO_HAS_EPOLL)
# if defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#  define TURNLOOP_ASIO_HAS_IO_URING_AS_DEFAULT 1
# endif // defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
# if defined(BOOST_ASIO_HAS_LOCAL_SOCKETS)
#  define TURNLOOP_ASIO_HAS_LOCAL_SOCKETS 1
# endif // defined(BOOST_ASIO_HAS_LOCAL_SOCKETS)
# if defined(BOOST_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
#  define TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR 1
# endif // defined(BOOST_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
# if defined(BOOST_ASIO_HAS_KQUEUE)
#  define TURNLOOP_ASIO_HAS_KQUEUE 1
# endif // defined(BOOST_ASIO_HAS_KQUEUE)
# if defined(BOOST_ASIO_HAS_DEV_POLL)
#  define TURNLOOP_ASIO_HAS_DEV_POLL 1
# endif // defined(BOOST_ASIO_HAS_DEV_POLL)
# if defined(BOOST_ASIO_HAS_IOCP)
#  define TURNLOOP_ASIO_HAS_IOCP 1
# endif // defined(BOOST_ASIO_HAS_IOCP)
# if defined(BOOST_ASIO_WINDOWS_RUNTIME)
#  define TURNLOOP_ASIO_WINDOWS_RUNTIME 1
# endif // defined(BOOST_ASIO_WINDOWS_RUNTIME)
#endif // defined(TURNLOOP_STANDALONE_ASIO)

namespace turnloop {

#if defined(TURNLOOP_STANDALONE_ASIO)

} // namespace turnloop

// Declared here, filled by the Asio headers each turnloop header includes.
namespace asio {
} // namespace asio

namespace turnloop {

/// The Asio turnloop runs on: `::asio` here, `boost::asio` with Boost.
namespace asio = ::asio;

/// The error code of that Asio: std::error_code here.
using error_code = std::error_code;

/// What turnloop throws: std::system_error here.
using system_error = std::system_error;

/// The category class of that error code: std::error_category here.
using error_category_type = std::error_category;

#else // defined(TURNLOOP_STANDALONE_ASIO)

} // namespace turnloop

// Declared here, filled by the Asio headers each turnloop header includes.
namespace boost {
namespace asio {
} // namespace asio
} // namespace boost

namespace turnloop {

/// The Asio turnloop runs on: `boost::asio` here, `::asio` standalone.
namespace asio = ::boost::asio;

/// The error code of that Asio: boost::system::error_code here.
using error_code = boost::system::error_code;

/// What turnloop throws: boost::system::system_error here.
using system_error = boost::system::system_error;

/// The category class of that error code: boost::system::error_category
/// here.
using error_category_type = boost::system::error_category;

#endif // defined(TURNLOOP_STANDALONE_ASIO)

namespace detail {

/// The base of turnloop's error category. Boost.System's takes a fixed
/// 64-bit id, so that codes from it compare equal across shared libraries
/// that each hold their own instance; std::error_category has none.
class error_category_base
#if defined(TURNLOOP_STANDALONE_ASIO)
  : public std::error_category
{
protected:
  constexpr explicit error_category_base(unsigned long long) noexcept
  {
  }
};
#else // defined(TURNLOOP_STANDALONE_ASIO)
  : public boost::system::error_category
{
protected:
  constexpr explicit error_category_base(unsigned long long id) noexcept
    : boost::system::error_category(id)
  {
  }
};
#endif // defined(TURNLOOP_STANDALONE_ASIO)

} // namespace detail
} // namespace turnloop

/// Specialises is_error_code_enum of Boost.System for @p Enum (nothing with
/// standalone Asio, whose error_code is std's). Use at global scope.
#if defined(TURNLOOP_STANDALONE_ASIO)
# define TURNLOOP_ASIO_ERROR_CODE_ENUM(Enum)
#else // defined(TURNLOOP_STANDALONE_ASIO)
# define TURNLOOP_ASIO_ERROR_CODE_ENUM(Enum) \
  namespace boost { namespace system { \
  template <> struct is_error_code_enum<Enum> : std::true_type {}; \
  } }
#endif // defined(TURNLOOP_STANDALONE_ASIO)

/// Open and close the namespace of the Asio in use, for the specialisations
/// of its templates that turnloop provides.
#if defined(TURNLOOP_STANDALONE_ASIO)
# define TURNLOOP_ASIO_NAMESPACE_BEGIN namespace asio {
# define TURNLOOP_ASIO_NAMESPACE_END }
#else // defined(TURNLOOP_STANDALONE_ASIO)
# define TURNLOOP_ASIO_NAMESPACE_BEGIN namespace boost { namespace asio {
# define TURNLOOP_ASIO_NAMESPACE_END } }
#endif // defined(TURNLOOP_STANDALONE_ASIO)

#endif // TURNLOOP_DETAIL_ASIO_HPP
