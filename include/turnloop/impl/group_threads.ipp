//
// turnloop/impl/group_threads.ipp
//

#ifndef TURNLOOP_IMPL_GROUP_THREADS_IPP
#define TURNLOOP_IMPL_GROUP_THREADS_IPP

#include <turnloop/impl/group_threads.hpp>
#include <turnloop/error.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(post.hpp)

namespace turnloop {
namespace detail {

// What on_each_loop shares with the handlers it posts. A handler that runs
// after the caller gave up on it (the group stopped first) finds its index
// taken and does nothing, so it never touches the caller's frame.
struct group_threads::visit
{
  const std::function<void(std::size_t)>* take;
  std::vector<char> taken;
  std::size_t remaining;
};

TURNLOOP_DECL void group_threads::start()
{
  std::lock_guard<std::mutex> lock(mutex_);
  if (started_)
    throw system_error(make_error_code(error::already_running),
        "turnloop::loop_group::run");
  started_ = true;
  handlers_ = 0;
  if (stopped_ || !exceptions_.empty())
    return;

  const std::size_t n = loops_.size();
  guards_.clear();
  guards_.resize(n);
  active_ = n;
  progress_ = false;
  done_ = false;
  stop_requested_ = false;
  threads_.reserve(n);
  try
  {
    for (std::size_t i = 0; i < n; ++i)
    {
      threads_.emplace_back([this, i] { thread_main(i); });
      ++live_;
    }
  }
  catch (...)
  {
    // The threads already started stop and are joined by join().
    exceptions_.push_back(std::current_exception());
    request_stop_locked();
  }
}

TURNLOOP_DECL void group_threads::thread_main(std::size_t index) noexcept
{
  loop& l = *loops_[index];
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;)
  {
    if (stop_requested_ || done_)
      break;
    // restart() under the lock: a stop() is ordered before it (and so seen
    // above) or after it (and so stops this run).
    l.restart();
    lock.unlock();

    std::size_t ran = 0;
    std::exception_ptr failure;
    try
    {
      ran = l.run();
    }
    catch (...)
    {
      failure = std::current_exception();
    }

    lock.lock();
    handlers_ += ran;
    guards_[index].reset();
    if (failure)
    {
      // The whole group stops; nothing queued anywhere is discarded, so a
      // restart() and run() carry on where the loops left off.
      exceptions_.push_back(failure);
      request_stop_locked();
      break;
    }
    if (stop_requested_ || done_)
      break;
    if (ran != 0)
      progress_ = true;
    if (--active_ != 0)
    {
      // Others still run and may post here: wait for them inside the loop.
      guards_[index].emplace(asio::require(l.get_executor(),
          asio::execution::outstanding_work.tracked));
      continue;
    }
    // Every loop has reported in this round.
    release_guards_locked();
    if (!progress_)
    {
      done_ = true;
      break;
    }
    progress_ = false;
    active_ = loops_.size();
  }
  --live_;
  changed_cv_.notify_all();
}

TURNLOOP_DECL std::size_t group_threads::join()
{
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!started_)
      return 0;
  }
  for (std::thread& t : threads_)
    if (t.joinable())
      t.join();

  std::lock_guard<std::mutex> lock(mutex_);
  threads_.clear();
  started_ = false;
  if (done_ || stop_requested_)
    stopped_ = true;
  if (!exceptions_.empty())
  {
    std::exception_ptr first = exceptions_.front();
    exceptions_.pop_front();
    std::rethrow_exception(first);
  }
  return handlers_;
}

TURNLOOP_DECL void group_threads::join_quietly() noexcept
{
  for (std::thread& t : threads_)
    if (t.joinable())
      t.join();
  std::lock_guard<std::mutex> lock(mutex_);
  threads_.clear();
  started_ = false;
  exceptions_.clear();
}

TURNLOOP_DECL void group_threads::stop()
{
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  request_stop_locked();
}

TURNLOOP_DECL bool group_threads::stopped() const
{
  std::lock_guard<std::mutex> lock(mutex_);
  return stopped_ || done_ || stop_requested_;
}

TURNLOOP_DECL void group_threads::restart()
{
  std::lock_guard<std::mutex> lock(mutex_);
  if (started_)
    throw system_error(make_error_code(error::already_running),
        "turnloop::loop_group::restart");
  stopped_ = false;
  done_ = false;
  stop_requested_ = false;
  for (auto& l : loops_)
    l->restart();
}

TURNLOOP_DECL void group_threads::request_stop_locked()
{
  stop_requested_ = true;
  release_guards_locked();
  for (auto& l : loops_)
    l->stop();
}

TURNLOOP_DECL void group_threads::release_guards_locked() noexcept
{
  for (auto& guard : guards_)
    guard.reset();
}

TURNLOOP_DECL void group_threads::on_each_loop(
    const std::function<void(std::size_t)>& take)
{
  const std::size_t n = loops_.size();
  for (auto& l : loops_)
    if (l->get_executor().running_in_this_thread())
      throw system_error(
          make_error_code(std::errc::resource_deadlock_would_occur),
          "turnloop::loop_group::stats called from one of the group's loops");

  std::unique_lock<std::mutex> lock(mutex_);
  if (live_ == 0)
  {
    // No loop runs, and the mutex orders this after the last run.
    for (std::size_t i = 0; i < n; ++i)
      take(i);
    return;
  }

  auto state = std::make_shared<visit>(visit{&take, std::vector<char>(n, 0), n});
  // Work coming in: the round under way must not end the group before the
  // handlers below have run.
  progress_ = true;
  for (std::size_t i = 0; i < n; ++i)
  {
    asio::post(*loops_[i], [this, state, i]
    {
      std::lock_guard<std::mutex> inner(mutex_);
      if (state->taken[i])
        return;
      (*state->take)(i);
      state->taken[i] = 1;
      --state->remaining;
      changed_cv_.notify_all();
    });
  }
  changed_cv_.wait(lock, [&] { return state->remaining == 0 || live_ == 0; });
  // If the group stopped first, the loops whose handler did not run are not
  // running any more: read them here.
  for (std::size_t i = 0; i < n; ++i)
    if (!state->taken[i])
    {
      take(i);
      state->taken[i] = 1;
    }
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_IMPL_GROUP_THREADS_IPP
