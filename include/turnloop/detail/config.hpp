//
// turnloop/detail/config.hpp
//
// Build switches shared by every turnloop header.
//

#ifndef TURNLOOP_DETAIL_CONFIG_HPP
#define TURNLOOP_DETAIL_CONFIG_HPP

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(detail/config.hpp)
#include TURNLOOP_ASIO_HEADER(version.hpp)

// turnloop drives Asio's own scheduler and reactor (doc/design.md,
// "Asio versions"), so it is tied to the Asio releases it is tested against,
// Boost.Asio and standalone Asio alike (the same numbers: Boost.Asio is made
// from standalone Asio's release). The gate is on Asio's own version, not
// BOOST_VERSION: a newer Asio may sit in front of an older Boost.
// TURNLOOP_ALLOW_UNTESTED_ASIO lets a user try an Asio newer than the
// newest tested one.
#define TURNLOOP_ASIO_OLDEST_TESTED 102600 // Asio 1.26, Boost 1.81
#define TURNLOOP_ASIO_NEWEST_TESTED 103802 // Asio 1.38.2

#if TURNLOOP_ASIO_VERSION < TURNLOOP_ASIO_OLDEST_TESTED
# error "turnloop needs Asio 1.26 (Boost 1.81) or newer"
#endif // TURNLOOP_ASIO_VERSION < TURNLOOP_ASIO_OLDEST_TESTED

#if TURNLOOP_ASIO_VERSION > TURNLOOP_ASIO_NEWEST_TESTED \
  && !defined(TURNLOOP_ALLOW_UNTESTED_ASIO)
# error "turnloop is tested with Asio 1.26 to 1.38.2 (Boost 1.81 to 1.90, and Asio 1.38.2 standalone or boostified); define TURNLOOP_ALLOW_UNTESTED_ASIO to try a newer one"
#endif // TURNLOOP_ASIO_VERSION > TURNLOOP_ASIO_NEWEST_TESTED && ...

// The platform's capabilities (and the #error where turnloop has no engine
// for the context Asio runs on).
#include <turnloop/detail/platform.hpp>

// TURNLOOP_HEADER_ONLY: define it to use turnloop without linking
// src/turnloop.cpp; every non-template function is then inline.
#if defined(TURNLOOP_HEADER_ONLY)
# define TURNLOOP_DECL inline
#else // defined(TURNLOOP_HEADER_ONLY)
# define TURNLOOP_DECL
#endif // defined(TURNLOOP_HEADER_ONLY)

// A function kept out of line (GCC and Clang; MSVC spells it its own way).
#if defined(_MSC_VER)
# define TURNLOOP_NOINLINE __declspec(noinline)
#else // defined(_MSC_VER)
# define TURNLOOP_NOINLINE __attribute__((noinline))
#endif // defined(_MSC_VER)

// A function that hands out a thread_local's address, kept out of line under
// clang: clang can keep a thread_local's address across a coroutine's
// suspension, so code inlined into a coroutine that resumes on another
// thread would read the first thread's variable (seen: a loop's
// running_in_this_thread() false after `co_await post(bind_executor(loop,
// use_awaitable))` had moved the coroutine to that loop). GCC 12 reloads it.
#if defined(__clang__)
# define TURNLOOP_THREAD_LOCAL_ACCESS __attribute__((noinline))
#else // defined(__clang__)
# define TURNLOOP_THREAD_LOCAL_ACCESS
#endif // defined(__clang__)

// Around code GCC's -Wmaybe-uninitialized misjudges once inlined (GCC 12 at
// -O1, through nested std::optional moves): a user's -Werror build must not
// fail on a member every constructor sets.
#if defined(__GNUC__) && !defined(__clang__)
# define TURNLOOP_MAYBE_UNINITIALIZED_BEGIN \
  _Pragma("GCC diagnostic push") \
  _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
# define TURNLOOP_MAYBE_UNINITIALIZED_END _Pragma("GCC diagnostic pop")
#else // defined(__GNUC__) && !defined(__clang__)
# define TURNLOOP_MAYBE_UNINITIALIZED_BEGIN
# define TURNLOOP_MAYBE_UNINITIALIZED_END
#endif // defined(__GNUC__) && !defined(__clang__)

#endif // TURNLOOP_DETAIL_CONFIG_HPP
