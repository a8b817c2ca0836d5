//
// turnloop/detail/asio.hpp
//
// The one place that spells the Asio turnloop runs on: Boost.Asio (the
// default) or standalone Asio (TURNLOOP_STANDALONE_ASIO defined, as the
// turnloop-standalone CMake target and pkg-config file do). Every other
// file names turnloop::asio, turnloop::error_code, turnloop::system_error
// and the TURNLOOP_ASIO_* macros below, and gets its Asio headers from here:
// in standalone mode no turnloop header includes anything under boost/.
//

#ifndef TURNLOOP_DETAIL_ASIO_HPP
#define TURNLOOP_DETAIL_ASIO_HPP

#if defined(TURNLOOP_STANDALONE_ASIO)
# include <asio/version.hpp>
# include <asio/detail/config.hpp>
# include <asio/any_io_executor.hpp>
# include <asio/associated_allocator.hpp>
# include <asio/associated_cancellation_slot.hpp>
# include <asio/associated_executor.hpp>
# include <asio/async_result.hpp>
# include <asio/basic_socket_acceptor.hpp>
# include <asio/basic_stream_socket.hpp>
# include <asio/basic_waitable_timer.hpp>
# include <asio/bind_cancellation_slot.hpp>
# include <asio/bind_executor.hpp>
# include <asio/buffer.hpp>
# include <asio/cancellation_signal.hpp>
# include <asio/cancellation_type.hpp>
# include <asio/consign.hpp>
# include <asio/dispatch.hpp>
# include <asio/error.hpp>
# include <asio/error_code.hpp>
# include <asio/execution.hpp>
# include <asio/execution_context.hpp>
# include <asio/executor_work_guard.hpp>
# include <asio/io_context.hpp>
# include <asio/ip/tcp.hpp>
# include <asio/is_executor.hpp>
# include <asio/multiple_exceptions.hpp>
# include <asio/post.hpp>
# include <asio/prefer.hpp>
# include <asio/query.hpp>
# include <asio/recycling_allocator.hpp>
# include <asio/require.hpp>
# include <asio/socket_base.hpp>
# include <asio/steady_timer.hpp>
# include <asio/strand.hpp>
# include <asio/system_error.hpp>
# include <asio/use_awaitable.hpp>
# include <asio/write.hpp>
# include <asio/detail/bind_handler.hpp>
# include <asio/detail/call_stack.hpp>
# include <asio/detail/epoll_reactor.hpp>
# include <asio/detail/handler_alloc_helpers.hpp>
# include <asio/detail/handler_work.hpp>
# include <asio/detail/memory.hpp>
# include <asio/detail/mutex.hpp>
# include <asio/detail/op_queue.hpp>
# include <asio/detail/reactor_op.hpp>
# include <asio/detail/scheduler.hpp>
# include <asio/detail/scheduler_operation.hpp>
# include <asio/detail/scheduler_thread_info.hpp>
# include <asio/detail/socket_option.hpp>
# include <asio/detail/thread_context.hpp>
# if ASIO_VERSION >= 103400
#  include <asio/config.hpp>
# endif // ASIO_VERSION >= 103400
# include <system_error>
#else // defined(TURNLOOP_STANDALONE_ASIO)
# include <boost/asio/version.hpp>
# include <boost/asio/detail/config.hpp>
# include <boost/asio/any_io_executor.hpp>
# include <boost/asio/associated_allocator.hpp>
# include <boost/asio/associated_cancellation_slot.hpp>
# include <boost/asio/associated_executor.hpp>
# include <boost/asio/async_result.hpp>
# include <boost/asio/basic_socket_acceptor.hpp>
# include <boost/asio/basic_stream_socket.hpp>
# include <boost/asio/basic_waitable_timer.hpp>
# include <boost/asio/bind_cancellation_slot.hpp>
# include <boost/asio/bind_executor.hpp>
# include <boost/asio/buffer.hpp>
# include <boost/asio/cancellation_signal.hpp>
# include <boost/asio/cancellation_type.hpp>
# include <boost/asio/consign.hpp>
# include <boost/asio/dispatch.hpp>
# include <boost/asio/error.hpp>
# include <boost/asio/execution.hpp>
# include <boost/asio/execution_context.hpp>
# include <boost/asio/executor_work_guard.hpp>
# include <boost/asio/io_context.hpp>
# include <boost/asio/ip/tcp.hpp>
# include <boost/asio/is_executor.hpp>
# include <boost/asio/multiple_exceptions.hpp>
# include <boost/asio/post.hpp>
# include <boost/asio/prefer.hpp>
# include <boost/asio/query.hpp>
# include <boost/asio/recycling_allocator.hpp>
# include <boost/asio/require.hpp>
# include <boost/asio/socket_base.hpp>
# include <boost/asio/steady_timer.hpp>
# include <boost/asio/strand.hpp>
# include <boost/asio/use_awaitable.hpp>
# include <boost/asio/write.hpp>
# include <boost/asio/detail/bind_handler.hpp>
# include <boost/asio/detail/call_stack.hpp>
# include <boost/asio/detail/epoll_reactor.hpp>
# include <boost/asio/detail/handler_alloc_helpers.hpp>
# include <boost/asio/detail/handler_work.hpp>
# include <boost/asio/detail/memory.hpp>
# include <boost/asio/detail/mutex.hpp>
# include <boost/asio/detail/op_queue.hpp>
# include <boost/asio/detail/reactor_op.hpp>
# include <boost/asio/detail/scheduler.hpp>
# include <boost/asio/detail/scheduler_operation.hpp>
# include <boost/asio/detail/scheduler_thread_info.hpp>
# include <boost/asio/detail/socket_option.hpp>
# include <boost/asio/detail/thread_context.hpp>
# if BOOST_ASIO_VERSION >= 103400
#  include <boost/asio/config.hpp>
# endif // BOOST_ASIO_VERSION >= 103400
# include <boost/system/error_code.hpp>
# include <boost/system/system_error.hpp>
#endif // defined(TURNLOOP_STANDALONE_ASIO)

#include <type_traits>

// What turnloop reads of Asio's configuration, whichever the spelling; and
// the headers that include the whole of it (turnloop/asio.hpp's).
#if defined(TURNLOOP_STANDALONE_ASIO)
# define TURNLOOP_ASIO_WHOLE <asio.hpp>
# define TURNLOOP_ASIO_AWAITABLE_OPERATORS <asio/experimental/awaitable_operators.hpp>
# define TURNLOOP_ASIO_VERSION ASIO_VERSION
# define TURNLOOP_ASIO_DEFINE_HANDLER_PTR ASIO_DEFINE_HANDLER_PTR
# if defined(ASIO_HAS_EPOLL)
#  define TURNLOOP_ASIO_HAS_EPOLL 1
# endif // defined(ASIO_HAS_EPOLL)
# if defined(ASIO_HAS_IO_URING_AS_DEFAULT)
#  define TURNLOOP_ASIO_HAS_IO_URING_AS_DEFAULT 1
# endif // defined(ASIO_HAS_IO_URING_AS_DEFAULT)
#else // defined(TURNLOOP_STANDALONE_ASIO)
# define TURNLOOP_ASIO_WHOLE <boost/asio.hpp>
# define TURNLOOP_ASIO_AWAITABLE_OPERATORS <boost/asio/experimental/awaitable_operators.hpp>
# define TURNLOOP_ASIO_VERSION BOOST_ASIO_VERSION
# define TURNLOOP_ASIO_DEFINE_HANDLER_PTR BOOST_ASIO_DEFINE_HANDLER_PTR
# if defined(BOOST_ASIO_HAS_EPOLL)
#  define TURNLOOP_ASIO_HAS_EPOLL 1
# endif // defined(BOOST_ASIO_HAS_EPOLL)
# if defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#  define TURNLOOP_ASIO_HAS_IO_URING_AS_DEFAULT 1
# endif // defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#endif // defined(TURNLOOP_STANDALONE_ASIO)

namespace turnloop {

#if defined(TURNLOOP_STANDALONE_ASIO)

/// The Asio turnloop runs on: `::asio` here, `boost::asio` with Boost.
namespace asio = ::asio;

/// The error code of that Asio: std::error_code here.
using error_code = std::error_code;

/// What turnloop throws: std::system_error here.
using system_error = std::system_error;

/// The category class of that error code: std::error_category here.
using error_category_type = std::error_category;

#else // defined(TURNLOOP_STANDALONE_ASIO)

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
