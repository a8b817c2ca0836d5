//
// turnloop/detail/engine/remote_queue.hpp
//
// Cross-thread posts: an intrusive multi-producer, single-consumer queue
// (D. Vyukov's node-based design). push is wait-free (one exchange and one
// store); pop belongs to the thread that owns the loop.
//

#ifndef TURNLOOP_DETAIL_ENGINE_REMOTE_QUEUE_HPP
#define TURNLOOP_DETAIL_ENGINE_REMOTE_QUEUE_HPP

#include <turnloop/detail/engine/operation.hpp>

#include <atomic>
#include <cstddef>

namespace turnloop {
namespace detail {

class remote_queue
{
public:
  remote_queue() noexcept
    : head_(&stub_),
      tail_(&stub_)
  {
    // A post writes the count and the head: one cache line for both, and
    // not the consumer's.
    static_assert(offsetof(remote_queue, pending_)
        - offsetof(remote_queue, head_) < 64,
        "the post count must share the head's cache line");
    static_assert(offsetof(remote_queue, tail_)
        - offsetof(remote_queue, head_) >= 64,
        "the consumer's tail must not share the head's cache line");
  }

  remote_queue(const remote_queue&) = delete;
  remote_queue& operator=(const remote_queue&) = delete;

  /// Any thread.
  void push(operation* op) noexcept
  {
    op->next_.store(nullptr, std::memory_order_relaxed);
    // Sequentially consistent (the same instruction as acq_rel on x86-64),
    // so that a loop that fences after its own handshake sees the push
    // begun (maybe_nonempty) if it sees the count.
    operation* prev = head_.exchange(op, std::memory_order_seq_cst);
    prev->next_.store(op, std::memory_order_release);
  }

  /// Consumer only. Returns nullptr when empty, and also while a producer is
  /// between its exchange and its link store; that producer then checks
  /// whether the loop is parked after linking, so the node is never stranded.
  operation* pop() noexcept
  {
    operation* tail = tail_;
    operation* next = tail->next_.load(std::memory_order_acquire);
    if (tail == &stub_)
    {
      if (!next)
        return nullptr;
      tail_ = next;
      tail = next;
      next = next->next_.load(std::memory_order_acquire);
    }
    if (next)
    {
      tail_ = next;
      return tail;
    }
    if (tail != head_.load(std::memory_order_acquire))
      return nullptr;
    push(&stub_);
    next = tail->next_.load(std::memory_order_acquire);
    if (next)
    {
      tail_ = next;
      return tail;
    }
    return nullptr;
  }

  /// The loop's count of cross-thread posts: counted before push, retired
  /// by the loop after pop. It shares the head's cache line, so a post
  /// takes one contended line for both writes, not two.
  std::atomic<std::size_t>& pending() noexcept
  {
    return pending_;
  }

  const std::atomic<std::size_t>& pending() const noexcept
  {
    return pending_;
  }

  /// Consumer only: true if anything has been pushed and not popped,
  /// including a push still in progress.
  bool maybe_nonempty() const noexcept
  {
    return tail_ != &stub_
      || head_.load(std::memory_order_acquire) != &stub_;
  }

private:
  struct stub_operation final : operation
  {
    stub_operation() noexcept
      : operation(&stub_operation::do_complete)
    {
    }

    static void do_complete(operation*, node_cache*, bool) noexcept
    {
    }
  };

  alignas(64) std::atomic<operation*> head_;
  std::atomic<std::size_t> pending_{0};
  alignas(64) operation* tail_;
  stub_operation stub_;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_REMOTE_QUEUE_HPP
