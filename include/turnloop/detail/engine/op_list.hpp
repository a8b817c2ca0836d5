//
// turnloop/detail/engine/op_list.hpp
//
// The loop thread's own FIFO of queued handlers: intrusive, unsynchronised.
//

#ifndef TURNLOOP_DETAIL_ENGINE_OP_LIST_HPP
#define TURNLOOP_DETAIL_ENGINE_OP_LIST_HPP

#include <turnloop/detail/engine/operation.hpp>

#include <cstddef>

namespace turnloop {
namespace detail {

class op_list
{
public:
  op_list() noexcept = default;
  op_list(const op_list&) = delete;
  op_list& operator=(const op_list&) = delete;

  bool empty() const noexcept
  {
    return front_ == nullptr;
  }

  std::size_t size() const noexcept
  {
    return size_;
  }

  void push_back(operation* op) noexcept
  {
    op->next_.store(nullptr, std::memory_order_relaxed);
    if (back_)
      back_->next_.store(op, std::memory_order_relaxed);
    else
      front_ = op;
    back_ = op;
    ++size_;
  }

  operation* pop_front() noexcept
  {
    operation* op = front_;
    if (op)
    {
      front_ = op->next_.load(std::memory_order_relaxed);
      if (!front_)
        back_ = nullptr;
      op->next_.store(nullptr, std::memory_order_relaxed);
      --size_;
    }
    return op;
  }

private:
  operation* front_ = nullptr;
  operation* back_ = nullptr;
  std::size_t size_ = 0;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_OP_LIST_HPP
