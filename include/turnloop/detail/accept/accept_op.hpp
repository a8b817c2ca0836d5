//
// turnloop/detail/accept/accept_op.hpp
//
// The operation behind turnloop::async_accept. It is a handler in its own
// right: handed to the acceptor's move-accept while accept runs in the
// kernel, and parked with the handle service (parked_accept_op) while it
// waits for a handle or for a backoff to pass, so a waiting accept is one
// allocation and no call to accept.
//
// It exposes its handler's allocator and cancellation slot, but not the
// handler's executor: its steps run on the acceptor's executor (the loop),
// where the handle service lives, and the handler is called at the end
// through its own executor (handler_work), as Asio's operations call theirs.
//
// While parked, the operation watches its acceptor with an async_wait for
// an error condition: the acceptor's cancel() and close() end that wait with
// operation_aborted, which is how a parked accept (which has no kernel
// accept for them to cancel) learns of them. The watch stays until the
// operation completes, so a cancel() that lands between the grant of a
// handle and the call to accept still ends an accept that would otherwise
// wait for a connection. (While the watch is queued on the descriptor,
// Asio's reactor does not try an accept speculatively: it waits for epoll.)
//

#ifndef TURNLOOP_DETAIL_ACCEPT_ACCEPT_OP_HPP
#define TURNLOOP_DETAIL_ACCEPT_ACCEPT_OP_HPP

#include <turnloop/detail/config.hpp>
#include <turnloop/detail/accept/accept_record.hpp>
#include <turnloop/detail/accept/handle_service.hpp>
#include <turnloop/detail/accept/handle_unit.hpp>
#include <turnloop/detail/ceiling_unit.hpp>
#include <turnloop/detail/foreign_delivery.hpp>
#include <turnloop/detail/loop_operation_work.hpp>

#include <turnloop/detail/asio.hpp>
#include TURNLOOP_ASIO_HEADER(associated_allocator.hpp)
#include TURNLOOP_ASIO_HEADER(associated_cancellation_slot.hpp)
#include TURNLOOP_ASIO_HEADER(associated_executor.hpp)
#include TURNLOOP_ASIO_HEADER(basic_socket_acceptor.hpp)
#include TURNLOOP_ASIO_HEADER(basic_stream_socket.hpp)
#include TURNLOOP_ASIO_HEADER(bind_cancellation_slot.hpp)
#include TURNLOOP_ASIO_HEADER(cancellation_signal.hpp)
#include TURNLOOP_ASIO_HEADER(error.hpp)
#include TURNLOOP_ASIO_HEADER(execution/context.hpp)
#include TURNLOOP_ASIO_HEADER(post.hpp)
#include TURNLOOP_ASIO_HEADER(query.hpp)
#include TURNLOOP_ASIO_HEADER(detail/bind_handler.hpp)
#include TURNLOOP_ASIO_HEADER(detail/handler_alloc_helpers.hpp)
#include TURNLOOP_ASIO_HEADER(detail/handler_work.hpp)
#include TURNLOOP_ASIO_HEADER(detail/memory.hpp)
#include TURNLOOP_ASIO_HEADER(detail/socket_ops.hpp)
#include TURNLOOP_ASIO_HEADER(detail/socket_types.hpp)

#include <cerrno>
#include <concepts>
#include <type_traits>
#include <new>
#include <optional>
#include <utility>

namespace turnloop {

template <typename Protocol, typename Executor>
class accepted_socket;

namespace detail {

/// Acceptors whose connections are stream sockets (TCP, local streams).
template <typename Protocol, typename Executor>
concept accepts_streams = std::same_as<
  typename Protocol::socket::template rebind_executor<Executor>::other,
  asio::basic_stream_socket<Protocol, Executor>>;

/// True for the errors with which accept reports that the process or the
/// system is out of descriptors or memory: the connection is still in the
/// backlog, and accepting again at once would fail again.
inline bool descriptor_shortage(const error_code& ec) noexcept
{
  return ec == asio::error::no_descriptors
    || ec == error_code(ENFILE,
        asio::error::get_system_category())
    || ec == asio::error::no_buffer_space
    || ec == asio::error::no_memory;
}

/// The handle service's canceller, in the slot of a handler whose
/// cancellation the service routes (a parked operation's, and a handler's
/// whose slot is not an asio::cancellation_slot).
class accept_canceller
{
public:
  accept_canceller(handle_service& service, slot_id id) noexcept
    : service_(&service),
      id_(id)
  {
  }

  void operator()(asio::cancellation_type_t type)
  {
    if (!!(type & (asio::cancellation_type::terminal
            | asio::cancellation_type::partial
            | asio::cancellation_type::total)))
      service_->cancel(id_, type);
  }

private:
  handle_service* service_;
  slot_id id_;
};

/// Completes a parked operation's watch on its acceptor.
template <typename Acceptor>
class accept_watch
{
public:
  accept_watch(handle_service& service, slot_id id, Acceptor& acceptor)
    noexcept
    : service_(&service),
      id_(id),
      acceptor_(&acceptor)
  {
  }

  void operator()(const error_code& ec)
  {
    if (ec)
      service_->watch_ended(id_, ec);
    else if (service_->watching(id_)) // else the acceptor may be gone
      service_->watch_ended(id_, listener_error());
  }

private:
  // A listening socket reports an error or a hang-up when it can accept no
  // more: its pending error says why, or else what accept(2) says of a
  // socket that is not listening.
  error_code listener_error() const
  {
    if (!acceptor_->is_open())
      return asio::error::operation_aborted;
    // Asio's getsockopt: POSIX's and Winsock's differ in their types.
    int error = 0;
    std::size_t size = sizeof(error);
    error_code ec;
    if (asio::detail::socket_ops::getsockopt(acceptor_->native_handle(), 0,
          SOL_SOCKET, SO_ERROR, &error, &size, ec) == 0 && error != 0)
      return error_code(error,
          asio::error::get_system_category());
    return asio::error::invalid_argument;
  }

  handle_service* service_;
  slot_id id_;
  Acceptor* acceptor_;
};

/// An operation while the handle service holds it, with its type erased.
template <typename Handler>
class parked_accept_op final : public parked_accept
{
public:
  TURNLOOP_ASIO_DEFINE_HANDLER_PTR(parked_accept_op);

  /// Moves @p op into a new parked operation.
  static parked_accept_op* create(Handler& op)
  {
    ptr p = {asio::detail::addressof(op), ptr::allocate(op), 0};
    p.p = new (p.v) parked_accept_op(std::move(op));
    parked_accept_op* result = p.p;
    p.v = p.p = 0;
    return result;
  }

private:
  explicit parked_accept_op(Handler&& op)
    : parked_accept(&parked_accept_op::do_resume,
        &parked_accept_op::do_destroy),
      op_(std::move(op))
  {
  }

  static void do_resume(parked_accept* base,
      const error_code& ec, handle_unit&& granted,
      const asio::cancellation_slot& slot)
  {
    parked_accept_op* o = static_cast<parked_accept_op*>(base);
    Handler op(std::move(o->op_));
    // Free this first: the operation may park again.
    ptr p = {asio::detail::addressof(op), o, o};
    p.reset();
    op.resume(ec, std::move(granted), slot);
  }

  static void do_destroy(parked_accept* base) noexcept
  {
    parked_accept_op* o = static_cast<parked_accept_op*>(base);
    Handler op(std::move(o->op_));
    ptr p = {asio::detail::addressof(op), o, o};
    p.reset();
  }

  Handler op_;
};

template <typename Protocol, typename Executor, typename Handler>
class accept_op
{
public:
  using acceptor_type = asio::basic_socket_acceptor<Protocol, Executor>;
  using peer_type = asio::basic_stream_socket<Protocol, Executor>;
  using socket_type = accepted_socket<Protocol, Executor>;
  using allocator_type = asio::associated_allocator_t<Handler>;
  using cancellation_slot_type = asio::cancellation_slot;

  /// Starts an accept on @p acceptor for @p handler, the accepted socket
  /// to be built on @p peer_executor (registered with that context's
  /// reactor) and to hold @p placed (a group_acceptor's count of the peer's
  /// loop; given back if the accept fails). Every outcome reaches the
  /// handler through its executor, never inside this call.
  static void start(acceptor_type& acceptor, const Executor& peer_executor,
      Handler&& handler, ceiling_unit&& placed)
  {
    handle_service* service = handle_service::of(asio::query(
          acceptor.get_executor(), asio::execution::context));
    if (!service)
      return refuse(acceptor, peer_executor, std::move(handler),
          asio::error::operation_not_supported);
    handle_service::admission a = service->admit();
    if (a.refused)
    {
      // Delivered in a later turn of the loop (see later_completion).
      handle_service& s = *service;
      return core_of(s.owner()).post(make_later_completion(s.owner(),
            acceptor.get_executor(), std::move(handler), a.refused,
            socket_type(peer_executor)), std::allocator<void>());
    }

    // A handler with an executor of its own gets its completion through
    // memory reserved now (see foreign_delivery.hpp).
    std::optional<reservation> reserved;
    try
    {
      const auto ex = asio::get_associated_executor(handler,
          acceptor.get_executor());
      if (!invokes_directly(ex, service->owner()))
        reserved.emplace(core_of(service->owner()), handler, ex);
    }
    catch (...)
    {
      service->complete(a.id, false);
      throw;
    }
    accept_op op(acceptor, peer_executor, *service, a.id,
        std::move(a.handle), std::move(placed), std::move(reserved),
        std::move(handler));
    if (!op.handle_)
      return op.park(false);
    if constexpr (plain_slot)
      op.accept(asio::get_associated_cancellation_slot(op.handler_));
    else
    {
      auto slot = asio::get_associated_cancellation_slot(op.handler_);
      if (!slot.is_connected())
        return op.accept(asio::cancellation_slot());
      slot.template emplace<accept_canceller>(*service, a.id);
      op.accept(service->proxy(a.id));
    }
  }

  accept_op(accept_op&&) = default;

  allocator_type get_allocator() const noexcept
  {
    return asio::get_associated_allocator(handler_);
  }

  cancellation_slot_type get_cancellation_slot() const noexcept
  {
    return slot_;
  }

  /// The kernel accept finished.
  void operator()(const error_code& ec, peer_type peer)
  {
    if (descriptor_shortage(ec))
      return park(true);
    complete(ec, std::move(peer));
  }

  /// Back from the handle service (parked_accept::resume).
  void resume(const error_code& ec, handle_unit&& granted,
      const asio::cancellation_slot& slot)
  {
    if (granted)
      handle_ = std::move(granted);
    if (ec)
      return complete(ec, peer_type(peer_executor_));
    if (!acceptor_->is_open())
    {
      // Closed while this waited; its watch's report is on its way.
      return complete(asio::error::operation_aborted,
          peer_type(peer_executor_));
    }
    try
    {
      accept(slot);
    }
    catch (const std::bad_alloc&)
    {
      // Asio could not allocate the accept, and left this operation as it
      // was: it ends with no_memory, its handle going to the next in line.
      complete(asio::error::no_memory,
          peer_type(peer_executor_));
    }
  }

private:
  static constexpr bool plain_slot = std::is_same_v<
    asio::associated_cancellation_slot_t<Handler>,
    asio::cancellation_slot>;

  using reservation = reserved_delivery<Handler,
        asio::associated_executor_t<Handler, Executor>,
        error_code, socket_type>;

  accept_op(acceptor_type& acceptor, const Executor& peer_executor,
      handle_service& service, slot_id id, handle_unit&& handle,
      ceiling_unit&& placed, std::optional<reservation>&& reserved,
      Handler&& handler)
    : acceptor_(&acceptor),
      peer_executor_(peer_executor),
      service_(&service),
      id_(id),
      handle_(std::move(handle)),
      placed_(std::move(placed)),
      reserved_(std::move(reserved)),
      handler_(std::move(handler)),
      work_(handler_, acceptor.get_executor()),
      loop_work_(acceptor.get_executor())
  {
  }

  static void refuse(acceptor_type& acceptor, const Executor& peer_executor,
      Handler&& handler, const error_code& ec)
  {
    asio::post(acceptor.get_executor(),
        asio::detail::move_binder2<Handler,
          error_code, socket_type>(0, std::move(handler), ec,
            socket_type(peer_executor)));
  }

  void accept(const asio::cancellation_slot& slot)
  {
    slot_ = slot;
    acceptor_type& acceptor = *acceptor_;
    // A copy: Asio may move this operation before it reads the executor.
    const Executor peer_executor = peer_executor_;
    acceptor.async_accept(peer_executor, std::move(*this));
  }

  // Hands this operation to the handle service: in line for a handle, or,
  // @p backing_off, holding one until accept may be tried again.
  void park(bool backing_off)
  {
    handle_service& service = *service_;
    acceptor_type& acceptor = *acceptor_;
    const slot_id id = id_;
    auto slot = asio::get_associated_cancellation_slot(handler_);
    const bool connected = slot.is_connected();

    parked_accept_op<accept_op>* op;
    try
    {
      service.reserve_resume(id);
      op = parked_accept_op<accept_op>::create(*this);
    }
    catch (const std::bad_alloc&)
    {
      // Backing off, this operation was accepted long ago: it ends with
      // no_memory (create() left it untouched). At its start, the
      // initiating call throws instead.
      if (backing_off)
        return complete(asio::error::no_memory,
            peer_type(peer_executor_));
      service.complete(id, false);
      throw;
    }
    catch (...)
    {
      service.complete(id, false);
      throw;
    }
    const handle_service::parking steps = backing_off
      ? service.back_off(id, op, connected)
      : service.wait(id, op, connected);
    if (steps.install_canceller)
      slot.template emplace<accept_canceller>(service, id);
    if (steps.start_watch)
    {
      acceptor.async_wait(acceptor_type::wait_error,
          asio::bind_cancellation_slot(steps.watch_slot,
            accept_watch<acceptor_type>(service, id, acceptor)));
    }
  }

  // The operation's one completion.
  void complete(const error_code& ec, peer_type&& peer)
  {
    if (service_->complete(id_, !ec))
      asio::get_associated_cancellation_slot(handler_).clear();
    if (ec)
    {
      handle_.reset(); // to the next accept in line
      placed_.reset();
    }
    socket_type socket(std::move(peer), std::move(handle_),
        std::move(placed_));
    asio::detail::handler_work<Handler, Executor> work(
        std::move(work_));
    loop_operation_work<Executor> loop_work(std::move(loop_work_));
    if (reserved_)
      return reserved_->deliver(std::move(handler_), ec, std::move(socket));
    asio::detail::move_binder2<Handler, error_code,
      socket_type> handler(0, std::move(handler_), ec, std::move(socket));
    work.complete(handler, handler.handler_);
  }

  acceptor_type* acceptor_;
  Executor peer_executor_;
  handle_service* service_;
  slot_id id_;
  handle_unit handle_;
  ceiling_unit placed_;
  std::optional<reservation> reserved_;
  Handler handler_;
  asio::detail::handler_work<Handler, Executor> work_;
  // Parked, this operation is no scheduler operation: the loop's work
  // (detail/loop_handler_work.hpp).
  loop_operation_work<Executor> loop_work_;
  asio::cancellation_slot slot_;
};

/// async_initiate's initiation for turnloop::async_accept.
template <typename Protocol, typename Executor>
class initiate_accept
{
public:
  using executor_type = Executor;

  initiate_accept(
      asio::basic_socket_acceptor<Protocol, Executor>& acceptor,
      const Executor& peer_executor)
    : acceptor_(&acceptor),
      peer_executor_(peer_executor)
  {
  }

  const executor_type& get_executor() const noexcept
  {
    return acceptor_->get_executor();
  }

  template <typename Handler>
  void operator()(Handler&& handler) const
  {
    (*this)(std::forward<Handler>(handler), ceiling_unit());
  }

  /// With the unit of a group_acceptor's count that the socket will hold.
  template <typename Handler>
  void operator()(Handler&& handler, ceiling_unit placed) const
  {
    using op = accept_op<Protocol, Executor, std::decay_t<Handler>>;
    op::start(*acceptor_, peer_executor_,
        std::decay_t<Handler>(std::forward<Handler>(handler)),
        std::move(placed));
  }

private:
  asio::basic_socket_acceptor<Protocol, Executor>* acceptor_;
  Executor peer_executor_;
};

} // namespace detail
} // namespace turnloop

#endif // TURNLOOP_DETAIL_ACCEPT_ACCEPT_OP_HPP
