//
// turnloop/detail/engine/turn_source.hpp
//
// The hook through which a service delivers completions inside the loop's
// turn: for example the blocking service's results, which worker threads
// leave in a ring. A worker calls loop_core::signal(source) after making a
// completion ready; the loop then calls run_ready() in its next turn, with
// the turn's budget. Signalling a source that is already signalled costs one
// atomic load, and only a parked loop is woken, so many completions made
// ready while the loop sleeps cost one wake between them.
//

#ifndef TURNLOOP_DETAIL_ENGINE_TURN_SOURCE_HPP
#define TURNLOOP_DETAIL_ENGINE_TURN_SOURCE_HPP

#include <turnloop/detail/config.hpp>

#include <atomic>
#include <cstddef>

namespace turnloop {
namespace detail {

class turn_source
{
public:
  /// Called on the loop's thread, in a turn: run at most @p budget ready
  /// completions and return how many ran. The loop clears the signal before
  /// calling, so anything made ready during or after the call is signalled
  /// anew; a source that stops at the budget with more ready must signal
  /// itself again (also when a completion throws: use a scope guard). It
  /// also stops after a completion that left loop_core::exception_pending()
  /// (a handler run inline by a strand threw): the loop rethrows that one
  /// exception, and the rest wait for the next run(), as on io_context.
  virtual std::size_t run_ready(std::size_t budget) = 0;

protected:
  turn_source() noexcept = default;
  turn_source(const turn_source&) = delete;
  turn_source& operator=(const turn_source&) = delete;
  ~turn_source() = default;

private:
  friend class loop_core;
  std::atomic<bool> signalled_{false};
  turn_source* next_source_ = nullptr;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_TURN_SOURCE_HPP
