//
// turnloop/detail/platform.hpp
//
// What this platform and this Asio configuration give turnloop, each a
// named capability decided at compile time. Code that differs by platform
// asks one of these, in one place per feature (named beside it), and has a
// portable path beside it.
//
//   TURNLOOP_REACTOR_NAME          the scheduler task the engine extends
//                                  (detail/engine/turn_reactor.hpp): "epoll"
//                                  (Linux), "kqueue" (macOS, the BSDs),
//                                  "/dev/poll" (Solaris), "select" (the
//                                  rest, and Linux with ASIO_DISABLE_EPOLL),
//                                  or "io_uring" (Asio's io_uring backend,
//                                  ASIO_HAS_IO_URING_AS_DEFAULT); "iocp" on
//                                  Windows, where there is no task to extend.
//   TURNLOOP_HAS_IOCP_ENGINE       the engine posts its turn to Asio's I/O
//                                  completion port context (Windows):
//                                  detail/engine/*_iocp.*; without it the
//                                  engine extends the reactor task above:
//                                  detail/engine/*_reactor.*.
//   TURNLOOP_HAS_SOCKET_REACTOR    sockets are served by a POSIX reactor
//                                  (epoll, kqueue, /dev/poll, select) on
//                                  which a pooled read queues its own
//                                  operation (detail/pool/pooled_recv_op.hpp);
//                                  elsewhere (IOCP, Asio's io_uring backend)
//                                  a pooled read waits with async_wait.
//   TURNLOOP_HAS_EPOLL_REACTOR     the task is Asio's epoll reactor: the
//                                  pooled read's reactor operation and
//                                  turnloop's own io_uring ring rely on its
//                                  registration (detail/pool/, detail/uring/).
//   TURNLOOP_HAS_IO_URING_PATH     turnloop's io_uring ring for pooled reads
//                                  and lease writes (Linux, with the epoll
//                                  reactor; elsewhere io_path::io_uring is
//                                  refused as invalid_config):
//                                  detail/uring/.
//   TURNLOOP_HAS_WINSOCK           sockets are Winsock's (Windows, and Cygwin,
//                                  where Asio uses Winsock too): a pooled
//                                  read's recv and peek are Winsock's:
//                                  detail/pool/impl/descriptor_read_winsock.ipp;
//                                  elsewhere POSIX's: descriptor_read.ipp.
//   TURNLOOP_HAS_FUTEX             a worker of the blocking pool sleeps on a
//                                  futex (Linux); where neither this nor
//                                  the next is defined, on a C++20 atomic
//                                  wait: detail/blocking/worker_wake.hpp.
//   TURNLOOP_HAS_WAIT_ON_ADDRESS   ... on WaitOnAddress (Windows 8 and later,
//                                  _WIN32_WINNT >= 0x0602; programs link
//                                  synchronization.lib): the same file.
//   TURNLOOP_HAS_WIN32_THREADS     a thread nobody joins (a long blocking
//                                  job's) is started with _beginthreadex,
//                                  not a detached std::thread (Windows):
//                                  detail/blocking/detached_thread.hpp.
//   TURNLOOP_HAS_BALANCED_REUSEPORT
//                                  SO_REUSEPORT spreads a port's connections
//                                  over the sockets bound to it (Linux;
//                                  FreeBSD's SO_REUSEPORT_LB): what
//                                  sharded_acceptor needs; elsewhere it is
//                                  refused at construction, naming
//                                  group_acceptor (detail/group/).
//

#ifndef TURNLOOP_DETAIL_PLATFORM_HPP
#define TURNLOOP_DETAIL_PLATFORM_HPP

#include <turnloop/detail/asio.hpp>

#if defined(TURNLOOP_ASIO_WINDOWS_RUNTIME)
# error "turnloop has no engine for the Windows Runtime: it runs over Asio's IOCP context (Win32), its POSIX reactors and its io_uring backend"
#elif defined(TURNLOOP_ASIO_HAS_IOCP)
# define TURNLOOP_REACTOR_NAME "iocp"
# define TURNLOOP_HAS_IOCP_ENGINE 1
#elif defined(TURNLOOP_ASIO_HAS_IO_URING_AS_DEFAULT)
# if TURNLOOP_ASIO_VERSION < 102800
// Asio 1.26's io_uring_service hands out submission entries without
// clearing their user data (get_sqe()), so the entry of a cancellation
// completes as a stale operation: every per-operation cancellation
// (cancellation slots, which turnloop's pooled reads and accept watches use,
// as do Asio's own composed operations) can then complete an operation twice.
// Asio 1.28 clears it.
#  error "turnloop over Asio's io_uring backend (ASIO_HAS_IO_URING_AS_DEFAULT) needs Asio 1.28 (Boost 1.83) or newer: Asio 1.26's io_uring_service does not clear a submission entry's user data, so a cancellation completes a stale operation"
# endif // TURNLOOP_ASIO_VERSION < 102800
# define TURNLOOP_REACTOR_NAME "io_uring"
#elif defined(TURNLOOP_ASIO_HAS_EPOLL)
# define TURNLOOP_REACTOR_NAME "epoll"
# define TURNLOOP_HAS_EPOLL_REACTOR 1
# define TURNLOOP_HAS_SOCKET_REACTOR 1
#elif defined(TURNLOOP_ASIO_HAS_KQUEUE)
# define TURNLOOP_REACTOR_NAME "kqueue"
# define TURNLOOP_HAS_SOCKET_REACTOR 1
#elif defined(TURNLOOP_ASIO_HAS_DEV_POLL)
# define TURNLOOP_REACTOR_NAME "/dev/poll"
# define TURNLOOP_HAS_SOCKET_REACTOR 1
#else // no other reactor: Asio's select reactor
# define TURNLOOP_REACTOR_NAME "select"
# define TURNLOOP_HAS_SOCKET_REACTOR 1
#endif // defined(TURNLOOP_ASIO_WINDOWS_RUNTIME) ...

#if defined(_WIN32) || defined(__CYGWIN__)
# define TURNLOOP_HAS_WINSOCK 1
#endif // defined(_WIN32) || defined(__CYGWIN__)

#if defined(_WIN32)
# define TURNLOOP_HAS_WIN32_THREADS 1
#endif // defined(_WIN32)

#if defined(_WIN32) && defined(_WIN32_WINNT) && (_WIN32_WINNT >= 0x0602)
# define TURNLOOP_HAS_WAIT_ON_ADDRESS 1
#endif // defined(_WIN32) && defined(_WIN32_WINNT) && ...

#if defined(__linux__)
# define TURNLOOP_HAS_FUTEX 1
# define TURNLOOP_HAS_BALANCED_REUSEPORT 1
# if defined(TURNLOOP_HAS_EPOLL_REACTOR)
#  define TURNLOOP_HAS_IO_URING_PATH 1
# endif // defined(TURNLOOP_HAS_EPOLL_REACTOR)
#elif defined(__FreeBSD__)
# define TURNLOOP_HAS_BALANCED_REUSEPORT 1
#endif // defined(__linux__)

namespace turnloop {
namespace detail {

// The capabilities above as constants, for `if constexpr`.
#if defined(TURNLOOP_HAS_BALANCED_REUSEPORT)
inline constexpr bool has_balanced_reuseport = true;
#else // defined(TURNLOOP_HAS_BALANCED_REUSEPORT)
inline constexpr bool has_balanced_reuseport = false;
#endif // defined(TURNLOOP_HAS_BALANCED_REUSEPORT)

#if defined(TURNLOOP_HAS_IOCP_ENGINE)
inline constexpr bool has_iocp_engine = true;
#else // defined(TURNLOOP_HAS_IOCP_ENGINE)
inline constexpr bool has_iocp_engine = false;
#endif // defined(TURNLOOP_HAS_IOCP_ENGINE)

#if defined(TURNLOOP_HAS_IO_URING_PATH)
inline constexpr bool has_io_uring_path = true;
#else // defined(TURNLOOP_HAS_IO_URING_PATH)
inline constexpr bool has_io_uring_path = false;
#endif // defined(TURNLOOP_HAS_IO_URING_PATH)

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_PLATFORM_HPP
