//
// turnloop/detail/operation.hpp
//
// The intrusive node every queued handler lives in, and the node that wraps a
// posted function object. A post costs one allocation (the node, through the
// handler's allocator) and no virtual call.
//

#ifndef TURNLOOP_DETAIL_OPERATION_HPP
#define TURNLOOP_DETAIL_OPERATION_HPP

#include <turnloop/detail/config.hpp>

#include <boost/asio/recycling_allocator.hpp>

#include <atomic>
#include <memory>
#include <type_traits>
#include <utility>

namespace turnloop {
namespace detail {

class operation
{
public:
  /// Runs the handler; the node is freed before the call.
  void complete()
  {
    func_(this, true);
  }

  /// Frees the node and the handler without running it.
  void destroy() noexcept
  {
    func_(this, false);
  }

protected:
  using func_type = void (*)(operation*, bool invoke);

  explicit operation(func_type func) noexcept
    : func_(func)
  {
  }

  ~operation() = default;

private:
  friend class op_list;
  friend class remote_queue;

  // Atomic because the cross-thread queue links nodes from several threads;
  // the loop-thread list uses relaxed loads and stores, which are plain moves.
  std::atomic<operation*> next_{nullptr};
  func_type func_;
};

// std::allocator means "no preference": use Asio's per-thread recycling cache,
// as io_context does, so a warm loop allocates nothing per post.
template <typename Allocator>
struct node_allocator
{
  template <typename T>
  using rebind = typename std::allocator_traits<Allocator>::template
    rebind_alloc<T>;

  template <typename T>
  static rebind<T> make(const Allocator& a) noexcept
  {
    return rebind<T>(a);
  }
};

template <typename T>
struct node_allocator<std::allocator<T>>
{
  template <typename U>
  using rebind = boost::asio::recycling_allocator<U>;

  template <typename U>
  static rebind<U> make(const std::allocator<T>&) noexcept
  {
    return rebind<U>();
  }
};

template <typename Function, typename Allocator>
class function_operation final : public operation
{
public:
  using allocator_type =
    typename node_allocator<Allocator>::template rebind<function_operation>;

  template <typename F>
  static function_operation* create(F&& f, const Allocator& a)
  {
    allocator_type alloc(node_allocator<Allocator>::template
        make<function_operation>(a));
    function_operation* p = std::allocator_traits<allocator_type>::allocate(
        alloc, 1);
    try
    {
      return ::new (static_cast<void*>(p))
        function_operation(std::forward<F>(f), alloc);
    }
    catch (...)
    {
      std::allocator_traits<allocator_type>::deallocate(alloc, p, 1);
      throw;
    }
  }

private:
  template <typename F>
  function_operation(F&& f, const allocator_type& a)
    : operation(&function_operation::do_complete),
      function_(std::forward<F>(f)),
      allocator_(a)
  {
  }

  static void do_complete(operation* base, bool invoke)
  {
    function_operation* self = static_cast<function_operation*>(base);
    allocator_type alloc(self->allocator_);

    // Free the node before the upcall so the handler can reuse the memory
    // for the next operation it starts (Asio's rule for handler memory).
    struct release
    {
      allocator_type& alloc;
      function_operation* node;
      ~release()
      {
        node->~function_operation();
        std::allocator_traits<allocator_type>::deallocate(alloc, node, 1);
      }
    };

    if (!invoke)
    {
      release r{alloc, self};
      return;
    }

    Function function(std::move(self->function_));
    {
      release r{alloc, self};
    }
    std::move(function)();
  }

  Function function_;
  [[no_unique_address]] allocator_type allocator_;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_OPERATION_HPP
