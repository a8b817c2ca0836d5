//
// turnloop/detail/loop_of.hpp
//
// Recognises a turnloop::loop behind a plain execution_context, for the
// services that are reached through a stream's or a polymorphic executor.
// Asio's execution_context is not polymorphic, so a loop is known by its
// reactor, which only a loop installs.
//

#ifndef TURNLOOP_DETAIL_LOOP_OF_HPP
#define TURNLOOP_DETAIL_LOOP_OF_HPP

#include <turnloop/detail/config.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(execution_context.hpp)

#include <atomic>
#include <cstdint>

namespace turnloop {

// Declared only: these functions hand the loop on, and their bodies, which
// need the whole loop, are in impl/loop.ipp.
class loop;

namespace detail {

/// The loop @p ctx is, or nullptr if it is another kind of context. Creates
/// no service in a context that is not a loop. Each thread remembers the
/// last loop it found, so that asking again for it costs a comparison (an
/// accept, a blocking job or a pooled read on a polymorphic executor asks
/// every time).
TURNLOOP_DECL loop* loop_of(asio::execution_context& ctx);

/// Counts loops that have begun to be destroyed: a thread's remembered loop
/// is trusted only while the count is what it was when it was remembered.
TURNLOOP_DECL std::atomic<std::uint64_t>& loops_ended() noexcept;

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_LOOP_OF_HPP
