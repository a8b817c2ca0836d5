//
// turnloop/detail/foreign_delivery.hpp
//
// How a service hands a completion to a handler whose executor is not the
// loop's (a strand, another context) without losing it when memory runs
// out. Dispatching there allocates (the strand's queue node, a type-erased
// function); when that allocation throws, asio::dispatch has already moved
// the handler and it is destroyed uncalled. So the service reserves, when it
// accepts the operation, the memory of a delivery: a node that will hold the
// handler and its arguments, and that is what is dispatched, through a
// courier that only points at it. If the executor cannot take the courier
// for lack of memory, the delivery is still whole: it goes to the loop's
// queue (an intrusive node, no allocation) and is dispatched again in a
// later turn, until the executor takes it. Nothing in a completion
// allocates except the executor's own dispatch, and that failing loses
// nothing: while memory stays short, the loop retries once a turn.
//
// What it cannot mend: an executor that throws after it has queued the
// courier (Asio's strand, when scheduling itself on its inner executor
// fails) keeps it, and the exception leaves run() as Asio's would.
//

#ifndef TURNLOOP_DETAIL_FOREIGN_DELIVERY_HPP
#define TURNLOOP_DETAIL_FOREIGN_DELIVERY_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/engine/loop_core.hpp>
#include <turnloop/detail/engine/operation.hpp>
#include <turnloop/detail/loop_access.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(associated_allocator.hpp)
#include TURNLOOP_ASIO_HEADER(associated_executor.hpp)
#include TURNLOOP_ASIO_HEADER(dispatch.hpp)
#include TURNLOOP_ASIO_HEADER(executor_work_guard.hpp)
#include TURNLOOP_ASIO_HEADER(recycling_allocator.hpp)

#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace turnloop {
namespace detail {

/// The delivery of whichever courier is being destroyed on this thread
/// while a dispatch unwinds: how a dispatch that threw tells its caller
/// that the delivery was not taken (and not run).
inline thread_local const void* undelivered_courier = nullptr;

template <typename Handler, typename Executor, typename... Args>
class foreign_delivery final : public operation
{
public:
  using allocator_type = asio::associated_allocator_t<Handler,
        asio::recycling_allocator<void>>;
  using node_allocator = typename std::allocator_traits<allocator_type>::
    template rebind_alloc<foreign_delivery>;
  using work_guard = asio::executor_work_guard<Executor>;

  template <typename... A>
  foreign_delivery(loop_core& core, const allocator_type& alloc,
      work_guard&& work, Handler&& handler, A&&... args)
    : operation(&foreign_delivery::do_complete),
      core_(core),
      allocator_(alloc),
      work_(std::move(work)),
      handler_(std::move(handler)),
      args_(std::forward<A>(args)...)
  {
  }

  /// Dispatches this delivery to the handler's executor; if the executor
  /// cannot take it for lack of memory, queues it on the loop to try again.
  /// Loop thread.
  void attempt()
  {
    undelivered_courier = nullptr;
    try
    {
      asio::dispatch(work_->get_executor(), courier(this));
      return;
    }
    catch (...)
    {
      // Not taken, or taken and run here, its handler throwing.
      if (std::exchange(undelivered_courier, nullptr) != this)
        throw;
      try
      {
        throw;
      }
      catch (const std::bad_alloc&)
      {
      }
      catch (...)
      {
        free(this);
        throw;
      }
    }
    core_.requeue(this);
  }

private:
  // What is dispatched: only a pointer. A courier destroyed while the
  // dispatch that took it unwinds leaves the delivery to the dispatching
  // call; one destroyed otherwise (its executor shut down) destroys it with
  // its handler, as Asio destroys the handlers it never ran.
  class courier
  {
  public:
    using allocator_type = foreign_delivery::allocator_type;

    explicit courier(foreign_delivery* d) noexcept
      : delivery_(d),
        allocator_(d->allocator_),
        unwinding_(std::uncaught_exceptions())
    {
    }

    courier(courier&& other) noexcept
      : delivery_(std::exchange(other.delivery_, nullptr)),
        allocator_(other.allocator_),
        unwinding_(other.unwinding_)
    {
    }

    courier& operator=(courier&&) = delete;

    ~courier()
    {
      if (!delivery_)
        return;
      if (std::uncaught_exceptions() > unwinding_)
        undelivered_courier = delivery_;
      else
        free(delivery_);
    }

    allocator_type get_allocator() const noexcept
    {
      return allocator_;
    }

    void operator()()
    {
      std::exchange(delivery_, nullptr)->invoke();
    }

  private:
    foreign_delivery* delivery_;
    allocator_type allocator_;
    int unwinding_;
  };

  static void free(foreign_delivery* d) noexcept
  {
    node_allocator alloc(d->allocator_);
    d->~foreign_delivery();
    std::allocator_traits<node_allocator>::deallocate(alloc, d, 1);
  }

  // On the handler's executor. The memory is freed before the upcall, as
  // Asio frees an operation's before calling its handler.
  void invoke()
  {
    Handler handler(std::move(handler_));
    std::tuple<Args...> args(std::move(args_));
    work_guard work(std::move(*work_));
    free(this);
    std::apply(std::move(handler), std::move(args));
  }

  static void do_complete(operation* base, node_cache*, bool invoke)
  {
    foreign_delivery* self = static_cast<foreign_delivery*>(base);
    if (invoke)
      self->attempt();
    else
      free(self);
  }

  loop_core& core_;
  allocator_type allocator_;
  std::optional<work_guard> work_;
  Handler handler_;
  std::tuple<Args...> args_;
};

/// The memory of one foreign_delivery, reserved when a service accepts an
/// operation whose handler has an executor of its own, and the work held on
/// that executor meanwhile. Movable with the operation that owns it.
template <typename Handler, typename Executor, typename... Args>
class reserved_delivery
{
  using delivery = foreign_delivery<Handler, Executor, Args...>;

public:
  using allocator_type = typename delivery::allocator_type;

  /// Reserves; throws std::bad_alloc, leaving @p handler untouched.
  reserved_delivery(loop_core& core, const Handler& handler,
      const Executor& ex)
    : core_(&core),
      allocator_(asio::get_associated_allocator(handler,
            asio::recycling_allocator<void>())),
      work_(ex)
  {
    typename delivery::node_allocator alloc(allocator_);
    memory_ = std::allocator_traits<typename delivery::node_allocator>::
      allocate(alloc, 1);
  }

  reserved_delivery(reserved_delivery&& other) noexcept
    : core_(other.core_),
      allocator_(other.allocator_),
      work_(std::move(other.work_)),
      memory_(std::exchange(other.memory_, nullptr))
  {
  }

  reserved_delivery& operator=(reserved_delivery&&) = delete;

  ~reserved_delivery()
  {
    if (memory_)
    {
      typename delivery::node_allocator alloc(allocator_);
      std::allocator_traits<typename delivery::node_allocator>::deallocate(
          alloc, memory_, 1);
    }
  }

  /// Builds the delivery of (@p handler, @p args...) in the reserved memory
  /// and dispatches it (see foreign_delivery::attempt). Once. Loop thread.
  template <typename... A>
  void deliver(Handler&& handler, A&&... args)
  {
    delivery* d = ::new (static_cast<void*>(memory_)) delivery(*core_,
        allocator_, std::move(work_), std::move(handler),
        std::forward<A>(args)...);
    memory_ = nullptr;
    d->attempt();
  }

private:
  loop_core* core_;
  allocator_type allocator_;
  typename delivery::work_guard work_;
  delivery* memory_ = nullptr;
};

/// A completion decided at the call and delivered in a later turn: a
/// refusal, say. It is the function a service posts to the loop (a plain
/// post on the loop's thread, a refusable one off it: remote_refusal.hpp).
/// Run in that turn, it calls a handler that runs on the loop directly, and
/// hands one bound elsewhere to its executor through a delivery reserved at
/// the call; so the turn allocates nothing but that executor's dispatch,
/// which is retried as above.
template <typename IoExecutor, typename Handler, typename... Args>
class later_completion
{
public:
  using handler_executor =
    asio::associated_executor_t<Handler, IoExecutor>;
  using reservation = reserved_delivery<Handler, handler_executor, Args...>;

  /// Throws std::bad_alloc if the delivery cannot be reserved; the
  /// handler is then destroyed, as when an initiating function throws.
  later_completion(loop& l, const IoExecutor& io_ex, Handler&& handler,
      Args... args)
    : handler_(std::move(handler)),
      args_(std::move(args)...)
  {
    const handler_executor ex =
      asio::get_associated_executor(handler_, io_ex);
    if (!invokes_directly(ex, l))
      reserved_.emplace(core_of(l), handler_, ex);
  }

  later_completion(later_completion&&) = default;

  /// The handler, for an operation that may yet go ahead with it.
  Handler& handler() noexcept
  {
    return handler_;
  }

  /// In a turn of the loop, on its thread.
  void operator()()
  {
    if (!reserved_)
      return std::apply(std::move(handler_), std::move(args_));
    std::apply([this](Args&&... args) {
          reserved_->deliver(std::move(handler_), std::move(args)...);
        }, std::move(args_));
  }

private:
  Handler handler_;
  std::tuple<Args...> args_;
  std::optional<reservation> reserved_;
};

/// Makes a later_completion of (@p handler, @p args...).
template <typename IoExecutor, typename Handler, typename... Args>
later_completion<IoExecutor, std::decay_t<Handler>, std::decay_t<Args>...>
make_later_completion(loop& l, const IoExecutor& io_ex, Handler&& handler,
    Args&&... args)
{
  return later_completion<IoExecutor, std::decay_t<Handler>,
         std::decay_t<Args>...>(l, io_ex, std::forward<Handler>(handler),
             std::forward<Args>(args)...);
}

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_FOREIGN_DELIVERY_HPP
