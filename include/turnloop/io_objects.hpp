//
// turnloop/io_objects.hpp
//
// Asio's I/O objects and coroutine types typed on a loop's executor, under
// the names Asio gives them: turnloop::steady_timer, turnloop::ip::tcp::socket,
// turnloop::awaitable<T>, ... Each is Asio's own class template with its
// executor argument set, so everything Asio documents for it holds.
//
// Why: an I/O object typed on any_io_executor (asio::steady_timer,
// asio::ip::tcp::socket) completes through a type-erased tracked copy of
// its executor unless that executor is io_context's (Asio checks the type),
// which a loop's never is; typed on the loop's executor, it completes as
// directly as on io_context. A program switches by changing declarations
// only. doc/benchmarks.md, "Getting the speed", has the figures.
//
// turnloop::io_objects<Executor> has the same names for any executor, so
// library code is written once for a loop and for io_context:
//
//   template <typename Context>
//   void arm(Context& ctx)
//   {
//     typename turnloop::io_objects_for<Context>::steady_timer timer(ctx);
//     ...
//   }
//
// In a coroutine of type turnloop::awaitable<T>, `co_await
// asio::this_coro::executor` is the loop's executor, from which these
// objects are made; `use_awaitable_t::as_default_on_t<Object>` is the
// object whose operations are awaitable without a token, as in Asio.
//

#ifndef TURNLOOP_IO_OBJECTS_HPP
#define TURNLOOP_IO_OBJECTS_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/loop.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(awaitable.hpp)
#include TURNLOOP_ASIO_HEADER(basic_datagram_socket.hpp)
#include TURNLOOP_ASIO_HEADER(basic_signal_set.hpp)
#include TURNLOOP_ASIO_HEADER(basic_socket_acceptor.hpp)
#include TURNLOOP_ASIO_HEADER(basic_stream_socket.hpp)
#include TURNLOOP_ASIO_HEADER(basic_waitable_timer.hpp)
#include TURNLOOP_ASIO_HEADER(high_resolution_timer.hpp)
#include TURNLOOP_ASIO_HEADER(ip/basic_resolver.hpp)
#include TURNLOOP_ASIO_HEADER(ip/tcp.hpp)
#include TURNLOOP_ASIO_HEADER(ip/udp.hpp)
#include TURNLOOP_ASIO_HEADER(use_awaitable.hpp)
#include TURNLOOP_ASIO_HEADER(wait_traits.hpp)
#if defined(TURNLOOP_ASIO_HAS_LOCAL_SOCKETS)
# include TURNLOOP_ASIO_HEADER(local/datagram_protocol.hpp)
# include TURNLOOP_ASIO_HEADER(local/stream_protocol.hpp)
#endif // defined(TURNLOOP_ASIO_HAS_LOCAL_SOCKETS)
#if defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
# include TURNLOOP_ASIO_HEADER(posix/basic_stream_descriptor.hpp)
#endif // defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)

#include <chrono>

namespace turnloop {

/// Asio's I/O objects and coroutine types typed on @p Executor, named as
/// Asio names them (the nested protocols as Asio's protocol classes name
/// theirs: `io_objects<E>::ip::tcp::socket`).
template <typename Executor>
struct io_objects
{
  using executor_type = Executor;

  using steady_timer = asio::basic_waitable_timer<std::chrono::steady_clock,
    asio::wait_traits<std::chrono::steady_clock>, Executor>;
  using system_timer = asio::basic_waitable_timer<std::chrono::system_clock,
    asio::wait_traits<std::chrono::system_clock>, Executor>;
  using high_resolution_timer = asio::basic_waitable_timer<
    std::chrono::high_resolution_clock,
    asio::wait_traits<std::chrono::high_resolution_clock>, Executor>;
  using signal_set = asio::basic_signal_set<Executor>;

  /// A coroutine whose `co_await asio::this_coro::executor` is an
  /// Executor, and the token that makes an operation awaitable in it.
  template <typename T = void>
  using awaitable = asio::awaitable<T, Executor>;
  using use_awaitable_t = asio::use_awaitable_t<Executor>;
  static constexpr use_awaitable_t use_awaitable{};

  struct ip
  {
    /// asio::ip::tcp's endpoint and version functions, and its socket,
    /// acceptor and resolver on Executor.
    struct tcp
    {
      using protocol_type = asio::ip::tcp;
      using endpoint = asio::ip::tcp::endpoint;
      using socket = asio::basic_stream_socket<asio::ip::tcp, Executor>;
      using acceptor = asio::basic_socket_acceptor<asio::ip::tcp, Executor>;
      using resolver = asio::ip::basic_resolver<asio::ip::tcp, Executor>;

      static protocol_type v4() noexcept
      {
        return protocol_type::v4();
      }

      static protocol_type v6() noexcept
      {
        return protocol_type::v6();
      }
    };

    /// asio::ip::udp's, likewise.
    struct udp
    {
      using protocol_type = asio::ip::udp;
      using endpoint = asio::ip::udp::endpoint;
      using socket = asio::basic_datagram_socket<asio::ip::udp, Executor>;
      using resolver = asio::ip::basic_resolver<asio::ip::udp, Executor>;

      static protocol_type v4() noexcept
      {
        return protocol_type::v4();
      }

      static protocol_type v6() noexcept
      {
        return protocol_type::v6();
      }
    };
  };

#if defined(TURNLOOP_ASIO_HAS_LOCAL_SOCKETS)
  struct local
  {
    /// asio::local::stream_protocol's endpoint, socket and acceptor.
    struct stream_protocol
    {
      using protocol_type = asio::local::stream_protocol;
      using endpoint = asio::local::stream_protocol::endpoint;
      using socket = asio::basic_stream_socket<protocol_type, Executor>;
      using acceptor = asio::basic_socket_acceptor<protocol_type, Executor>;
    };

    /// asio::local::datagram_protocol's endpoint and socket.
    struct datagram_protocol
    {
      using protocol_type = asio::local::datagram_protocol;
      using endpoint = asio::local::datagram_protocol::endpoint;
      using socket = asio::basic_datagram_socket<protocol_type, Executor>;
    };
  };
#endif // defined(TURNLOOP_ASIO_HAS_LOCAL_SOCKETS)

#if defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
  struct posix
  {
    using stream_descriptor = asio::posix::basic_stream_descriptor<Executor>;
  };
#endif // defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
};

/// io_objects of @p ExecutionContext's executor: `io_objects_for<Context>`
/// in code written once for turnloop::loop and asio::io_context.
template <typename ExecutionContext>
using io_objects_for = io_objects<typename ExecutionContext::executor_type>;

/// @name The names for a turnloop::loop: io_objects<loop::executor_type>'s
/// @{
using loop_objects = io_objects<loop::executor_type>;
using steady_timer = loop_objects::steady_timer;
using system_timer = loop_objects::system_timer;
using high_resolution_timer = loop_objects::high_resolution_timer;
using signal_set = loop_objects::signal_set;
template <typename T = void>
using awaitable = loop_objects::awaitable<T>;
using use_awaitable_t = loop_objects::use_awaitable_t;
inline constexpr use_awaitable_t use_awaitable{};

namespace ip {
using tcp = loop_objects::ip::tcp;
using udp = loop_objects::ip::udp;
} // namespace ip

#if defined(TURNLOOP_ASIO_HAS_LOCAL_SOCKETS)
namespace local {
using stream_protocol = loop_objects::local::stream_protocol;
using datagram_protocol = loop_objects::local::datagram_protocol;
} // namespace local
#endif // defined(TURNLOOP_ASIO_HAS_LOCAL_SOCKETS)

#if defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
namespace posix {
using stream_descriptor = loop_objects::posix::stream_descriptor;
} // namespace posix
#endif // defined(TURNLOOP_ASIO_HAS_POSIX_STREAM_DESCRIPTOR)
/// @}

} // namespace turnloop

#endif // TURNLOOP_IO_OBJECTS_HPP
