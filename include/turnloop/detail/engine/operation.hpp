//
// turnloop/detail/engine/operation.hpp
//
// The intrusive node every queued handler lives in, and the node that wraps a
// posted function object. A post costs one node (recycled on the loop
// thread) and no virtual call.
//

#ifndef TURNLOOP_DETAIL_ENGINE_OPERATION_HPP
#define TURNLOOP_DETAIL_ENGINE_OPERATION_HPP

#include <turnloop/detail/config.hpp>

#include <turnloop/detail/engine/node_cache.hpp>

#include <atomic>
#include <memory>
#include <type_traits>
#include <utility>

namespace turnloop {
namespace detail {

class operation
{
public:
  /// Runs the handler; the node is freed (into @p cache if it has room)
  /// before the call. @p cache is the loop's, or null off the loop thread.
  void complete(node_cache* cache)
  {
    func_(this, cache, true);
  }

  /// Frees the node and the handler without running it.
  void destroy(node_cache* cache) noexcept
  {
    func_(this, cache, false);
  }

protected:
  using func_type = void (*)(operation*, node_cache*, bool invoke);

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

// How a node's memory is obtained. A user's allocator (from the executor's
// allocator property) is used as given; std::allocator means "no
// preference", and then the loop's node cache is used, as io_context uses
// Asio's per-thread recycling cache. @p on_loop_thread says which side of the
// cache the calling thread may use.
template <typename Node, typename Allocator>
struct node_memory
{
  using allocator_type = typename std::allocator_traits<Allocator>::template
    rebind_alloc<Node>;

  static void* allocate(const Allocator& a, node_cache&, bool)
  {
    allocator_type alloc(a);
    return std::allocator_traits<allocator_type>::allocate(alloc, 1);
  }

  static void deallocate(const Allocator& a, node_cache*, void* p) noexcept
  {
    allocator_type alloc(a);
    std::allocator_traits<allocator_type>::deallocate(alloc,
        static_cast<Node*>(p), 1);
  }
};

template <typename Node, typename T>
  requires (alignof(Node) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__)
struct node_memory<Node, std::allocator<T>>
{
  static void* allocate(const std::allocator<T>&, node_cache& cache,
      bool on_loop_thread)
  {
    return on_loop_thread
      ? cache.template allocate<sizeof(Node)>()
      : cache.template allocate_elsewhere<sizeof(Node)>();
  }

  /// @p cache is the loop's on the loop thread, null elsewhere.
  static void deallocate(const std::allocator<T>&, node_cache* cache,
      void* p) noexcept
  {
    if (cache)
      cache->template deallocate<sizeof(Node)>(p);
    else
      node_cache::deallocate_elsewhere(p);
  }
};

template <typename Function, typename Allocator>
class function_operation final : public operation
{
  using memory = node_memory<function_operation, Allocator>;

public:
  /// Builds a node for @p f with memory from the loop's @p cache.
  template <typename F>
  static function_operation* create(F&& f, const Allocator& a,
      node_cache& cache, bool on_loop_thread)
  {
    void* p = memory::allocate(a, cache, on_loop_thread);
    try
    {
      return ::new (p) function_operation(std::forward<F>(f), a);
    }
    catch (...)
    {
      memory::deallocate(a, on_loop_thread ? &cache : nullptr, p);
      throw;
    }
  }

private:
  template <typename F>
  function_operation(F&& f, const Allocator& a)
    : operation(&function_operation::do_complete),
      function_(std::forward<F>(f)),
      allocator_(a)
  {
  }

  static void do_complete(operation* base, node_cache* cache, bool invoke)
  {
    function_operation* self = static_cast<function_operation*>(base);

    // Free the node before the upcall so the handler can reuse the memory
    // for the next operation it starts (Asio's rule for handler memory).
    struct release
    {
      function_operation* node;
      node_cache* cache;
      ~release()
      {
        Allocator alloc(node->allocator_);
        node->~function_operation();
        memory::deallocate(alloc, cache, node);
      }
    };

    if (!invoke)
    {
      release r{self, cache};
      return;
    }

    Function function(std::move(self->function_));
    {
      release r{self, cache};
    }
    std::move(function)();
  }

  Function function_;
  [[no_unique_address]] Allocator allocator_;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ENGINE_OPERATION_HPP
