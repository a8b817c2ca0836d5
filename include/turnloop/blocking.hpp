//
// turnloop/blocking.hpp
//
// Blocking work off the loop: run a function on a worker thread and receive
// its result on the loop's thread, in a turn, through any Asio completion
// token. doc/blocking.md is the guide.
//
//   auto [e, n] = co_await turnloop::async_blocking(ex,
//       [] { return read_file("a.txt"); }, asio::use_awaitable);
//

#ifndef TURNLOOP_BLOCKING_HPP
#define TURNLOOP_BLOCKING_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/blocking_stats.hpp>
#include <turnloop/stop_token.hpp>
#include <turnloop/detail/blocking/blocking_traits.hpp>
#include <turnloop/loop.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(async_result.hpp)
#include TURNLOOP_ASIO_HEADER(execution/executor.hpp)
#include TURNLOOP_ASIO_HEADER(is_executor.hpp)

namespace turnloop {

/// What a job's function returns, decayed; void if it returns nothing.
/// The function is called with a turnloop::stop_token (std::stop_token,
/// see turnloop/stop_token.hpp) if it accepts one, and with no argument
/// otherwise.
template <typename Function>
using blocking_result_t = detail::blocking_result_t<Function>;

/// The completion signature of a job whose function returns @p Result:
///
///   void(error_code ec, std::exception_ptr e, Result value)
///   void(error_code ec, std::exception_ptr e)  // void result
///
/// Exactly one of these holds:
/// - ec == turnloop::error::resource_limit: the submission was refused at a
///   ceiling; the job never ran.
/// - ec == asio::error::no_memory: the job was admitted but could not
///   be recorded for lack of memory; it never ran.
/// - ec == asio::error::operation_aborted: the job was cancelled
///   before it started; it never ran.
/// - e != nullptr: the job threw; e is what it threw.
/// - otherwise the job returned @p value.
/// In the first three cases @p value is value-initialised.
template <typename Result>
using blocking_signature_t = typename detail::blocking_signature<Result>::type;

/// An executor that async_blocking accepts: its execution context must be a
/// turnloop::loop. Checked at the call (see async_blocking).
template <typename T>
concept blocking_executor = asio::execution::is_executor<T>::value
  || asio::is_executor<T>::value;

/// Runs @p function on one of the loop's bounded worker threads and
/// delivers its outcome to @p token on the loop's thread, in a turn.
///
/// Use it for work that ends in bounded time (a file read, a stat, a
/// compression call): bounded jobs share config::blocking.threads workers
/// and wait in a queue of at most config::blocking.queue_capacity jobs.
/// Work that may block for long belongs in async_blocking_long.
///
/// @param ex The loop's executor, or an executor whose context is a
/// turnloop::loop: a strand of it, or an any_io_executor that holds the
/// loop's executor or a strand of it. It is the I/O executor: a handler
/// with no associated executor of its own is run on it.
/// @param function Called as `function(turnloop::stop_token)` if it accepts
/// that, as `function()` otherwise, once, on a worker thread. The token is
/// signalled when the operation is cancelled (its cancellation slot) while
/// the function runs, and when the loop is destroyed. Its result must be
/// void or default- and move-constructible.
/// @param token Any completion token; the signature is
/// blocking_signature_t<blocking_result_t<Function>>.
///
/// Refusals: if config::blocking.max_undelivered jobs are admitted and not
/// yet delivered, if queue_capacity jobs wait for a worker, if no worker
/// thread could be started, or if config::max_operations operations are
/// outstanding, the job is not run and the completion receives
/// turnloop::error::resource_limit in a later turn (never inside this call).
/// The ceilings are checked at the call, on whichever thread makes it.
/// If the job is admitted but the loop cannot record it for lack of memory
/// (a job submitted from another thread, recorded when it reaches the loop),
/// the completion receives asio::error::no_memory; it never ran.
///
/// Cancellation (per-operation cancellation slot, any type): before the
/// job starts, it is removed and completes with operation_aborted; while it
/// runs, its turnloop::stop_token is signalled and its outcome is delivered when
/// it returns; after it returns, nothing changes.
///
/// Thread safety: any thread. A submission from another thread is admitted
/// or refused at the call, so what waits for the loop is bounded by the
/// ceilings however long the loop does not turn; an admitted job is built
/// there and started in the loop's next turn. Its refusal is posted to the
/// loop as one of config::post_capacity cross-thread posts; beyond that the
/// call throws (see below). Cancellation signals must be emitted on the
/// loop's thread, as with every Asio operation.
///
/// @throws system_error (operation_not_supported) if @p ex's
/// context is not a turnloop::loop; system_error (resource_limit) if the
/// call comes from another thread, is refused, and config::post_capacity
/// cross-thread posts are already queued, so that the refusal could not be
/// queued either (the handler is then destroyed without being invoked);
/// what allocating the job throws.
template <blocking_executor Executor, typename Function,
    typename CompletionToken =
      asio::default_completion_token_t<Executor>>
auto async_blocking(const Executor& ex, Function&& function,
    CompletionToken&& token = CompletionToken());

/// async_blocking on @p l's executor.
template <typename Function,
    typename CompletionToken =
      asio::default_completion_token_t<loop::executor_type>>
auto async_blocking(loop& l, Function&& function,
    CompletionToken&& token = CompletionToken());

/// Runs @p function on a thread of its own, created for it and ended with
/// it, and delivers its outcome as async_blocking does.
///
/// Use it for work that may block for a long or unknown time (a blocking
/// read of a pipe, a database call waiting for a lock): a long job is never
/// queued, so it cannot wait behind another and cannot make bounded jobs
/// wait. At most config::blocking.long_threads_max run at once; beyond
/// that, or if the thread cannot be created, the completion receives
/// turnloop::error::resource_limit (always in a later turn) and the job
/// never runs. Parameters, cancellation and thread safety as async_blocking.
template <blocking_executor Executor, typename Function,
    typename CompletionToken =
      asio::default_completion_token_t<Executor>>
auto async_blocking_long(const Executor& ex, Function&& function,
    CompletionToken&& token = CompletionToken());

/// async_blocking_long on @p l's executor.
template <typename Function,
    typename CompletionToken =
      asio::default_completion_token_t<loop::executor_type>>
auto async_blocking_long(loop& l, Function&& function,
    CompletionToken&& token = CompletionToken());

/// A snapshot of @p l's blocking service; all zero if nothing was ever
/// submitted (reading it creates nothing). Call it on the loop's thread, or
/// while the loop is not running.
TURNLOOP_DECL blocking_stats blocking_statistics(loop& l);

} // namespace turnloop

#include <turnloop/impl/blocking.hpp>
#if defined(TURNLOOP_HEADER_ONLY)
# include <turnloop/impl/blocking.ipp>
#endif // defined(TURNLOOP_HEADER_ONLY)

#endif // TURNLOOP_BLOCKING_HPP
