//
// turnloop/detail/uring/impl/uring_ring.ipp
//

#ifndef TURNLOOP_DETAIL_URING_IMPL_URING_RING_IPP
#define TURNLOOP_DETAIL_URING_IMPL_URING_RING_IPP

#include <turnloop/detail/config.hpp>

// turnloop's io_uring path: Linux with Asio's epoll reactor
// (detail/platform.hpp).
#if defined(TURNLOOP_HAS_IO_URING_PATH)

#include <turnloop/detail/uring/uring_ring.hpp>

#include <cerrno>
#include <cstring>
#include <new>

#include <poll.h>
#include <signal.h>

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace turnloop {
namespace detail {

// The ring's sizes. A turn's submissions go in one system call while they
// fit in the submission queue (a full queue is submitted early); the
// completion queue holds more than a turn reaps, and the kernel keeps any
// overflow (IORING_FEAT_NODROP, required) until the next reap.
struct uring_sizes
{
  static constexpr unsigned submissions = 256;
  static constexpr unsigned completions = 1024;
};

// The buffer ring's layout, written out here: the kernel header declares it
// with a flexible array that C++ compilers lay out 8 bytes further on than
// C does. Entry i is 16 bytes at offset 16 i; the tail the pool advances
// overlays entry 0's last two bytes.
struct uring_buffer_entry
{
  std::uint64_t addr;
  std::uint32_t len;
  std::uint16_t bid;
  std::uint16_t tail_or_reserved;
};

static_assert(sizeof(uring_buffer_entry) == sizeof(io_uring_buf),
    "the buffer ring's entries are the kernel's");

TURNLOOP_DECL uring_ring* uring_ring::create(std::size_t buffer_slots,
    int& error) noexcept
{
  error = 0;
  if (uring_setup_refusal)
    if ((error = uring_setup_refusal()) != 0)
      return nullptr;

  uring_ring* r = new (std::nothrow) uring_ring;
  if (!r)
  {
    error = ENOMEM;
    return nullptr;
  }

  // Cooperative task running: the kernel finishes a completion when the
  // submitting thread next enters it (the reactor's wait or the next
  // submission), and says so in the flags, instead of interrupting it. Not
  // DEFER_TASKRUN or SINGLE_ISSUER: those tie the ring to the thread that
  // made it, and a loop may be run by different threads in turn.
  io_uring_params p;
  std::memset(&p, 0, sizeof(p));
  p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL
    | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
  p.cq_entries = uring_sizes::completions;
  int fd = static_cast<int>(::syscall(__NR_io_uring_setup,
        uring_sizes::submissions, &p));
  if (fd < 0)
  {
    error = errno;
    delete r;
    return nullptr;
  }
  r->ring_fd_ = fd;

  // Each step below may fail on a kernel without the feature; the ring is
  // then refused as a whole, and the destructor undoes what was done.
  auto fail = [&](int e) -> uring_ring*
  {
    error = e;
    delete r;
    return nullptr;
  };
  if ((p.features & IORING_FEAT_NODROP) == 0
      || (p.features & IORING_FEAT_SINGLE_MMAP) == 0
      || (p.features & IORING_FEAT_FAST_POLL) == 0)
    return fail(ENOTSUP);

  r->sq_map_size_ = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  const std::size_t cq_size = p.cq_off.cqes
    + p.cq_entries * sizeof(io_uring_cqe);
  if (cq_size > r->sq_map_size_)
    r->sq_map_size_ = cq_size;
  void* sq = ::mmap(nullptr, r->sq_map_size_, PROT_READ | PROT_WRITE,
      MAP_SHARED, fd, IORING_OFF_SQ_RING);
  if (sq == MAP_FAILED)
    return fail(errno);
  r->sq_map_ = sq;
  r->sqes_size_ = p.sq_entries * sizeof(io_uring_sqe);
  void* sqes = ::mmap(nullptr, r->sqes_size_, PROT_READ | PROT_WRITE,
      MAP_SHARED, fd, IORING_OFF_SQES);
  if (sqes == MAP_FAILED)
    return fail(errno);
  r->sqes_ = static_cast<io_uring_sqe*>(sqes);

  char* base = static_cast<char*>(sq);
  r->sq_head_ = reinterpret_cast<unsigned*>(base + p.sq_off.head);
  r->sq_tail_ = reinterpret_cast<unsigned*>(base + p.sq_off.tail);
  r->sq_flags_ = reinterpret_cast<unsigned*>(base + p.sq_off.flags);
  r->sq_array_ = reinterpret_cast<unsigned*>(base + p.sq_off.array);
  r->sq_mask_ = *reinterpret_cast<unsigned*>(base + p.sq_off.ring_mask);
  r->sq_entries_ = p.sq_entries;
  r->cq_head_ = reinterpret_cast<unsigned*>(base + p.cq_off.head);
  r->cq_tail_ = reinterpret_cast<unsigned*>(base + p.cq_off.tail);
  r->cqes_ = reinterpret_cast<io_uring_cqe*>(base + p.cq_off.cqes);
  r->cq_flags_ = reinterpret_cast<unsigned*>(base + p.cq_off.flags);
  r->signal_completions(false);
  r->cq_mask_ = *reinterpret_cast<unsigned*>(base + p.cq_off.ring_mask);

  // The buffer ring (16 bytes a slot) and the id table (8 bytes a slot),
  // anonymous memory: resident only as far as it is written.
  r->buffer_slots_ = buffer_slots;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t ring_bytes =
    (buffer_slots * sizeof(uring_buffer_entry) + page - 1) / page * page;
  r->buffers_map_size_ = ring_bytes + buffer_slots * sizeof(void*);
  void* buffers = ::mmap(nullptr, r->buffers_map_size_,
      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buffers == MAP_FAILED)
    return fail(errno);
  r->buffers_map_ = buffers;
  r->ids_ = reinterpret_cast<void**>(static_cast<char*>(buffers) + ring_bytes);

  io_uring_buf_reg reg;
  std::memset(&reg, 0, sizeof(reg));
  reg.ring_addr = reinterpret_cast<std::uint64_t>(buffers);
  reg.ring_entries = static_cast<std::uint32_t>(buffer_slots);
  reg.bgid = buffer_group;
  if (::syscall(__NR_io_uring_register, fd, IORING_REGISTER_PBUF_RING,
        &reg, 1) != 0)
    return fail(errno);
  r->buffers_registered_ = true;

  r->event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (r->event_fd_ < 0)
    return fail(errno);
  if (::syscall(__NR_io_uring_register, fd, IORING_REGISTER_EVENTFD,
        &r->event_fd_, 1) != 0)
    return fail(errno);

  // Receive, send and cancel-any must all be supported.
  // (The header's probe ends in a flexible array: laid out by hand.)
  alignas(io_uring_probe) unsigned char probe_bytes[sizeof(io_uring_probe)
    + 64 * sizeof(io_uring_probe_op)];
  std::memset(probe_bytes, 0, sizeof(probe_bytes));
  if (::syscall(__NR_io_uring_register, fd, IORING_REGISTER_PROBE,
        probe_bytes, 64) != 0)
    return fail(errno);
  const auto* probe = reinterpret_cast<const io_uring_probe*>(probe_bytes);
  const auto* ops = reinterpret_cast<const io_uring_probe_op*>(
      probe_bytes + sizeof(io_uring_probe));
  auto supported = [&](unsigned op) {
    return op <= probe->last_op && (ops[op].flags & IO_URING_OP_SUPPORTED);
  };
  for (unsigned op : {IORING_OP_RECV, IORING_OP_SEND, IORING_OP_ASYNC_CANCEL})
    if (!supported(op))
      return fail(ENOTSUP);
  // Optional: without them the loop waits in epoll, as before.
  r->can_wait_ = (p.features & IORING_FEAT_EXT_ARG) != 0
    && supported(IORING_OP_POLL_ADD);
  return r;
}

TURNLOOP_DECL uring_ring::~uring_ring()
{
  // Closing the ring's descriptor lets the kernel tear it down; the
  // pool_ring has drained every operation first, so no buffer it still
  // knows is written after this.
  if (buffers_registered_)
  {
    io_uring_buf_reg reg;
    std::memset(&reg, 0, sizeof(reg));
    reg.bgid = buffer_group;
    ::syscall(__NR_io_uring_register, ring_fd_, IORING_UNREGISTER_PBUF_RING,
        &reg, 1);
  }
  if (sqes_)
    ::munmap(sqes_, sqes_size_);
  if (sq_map_)
    ::munmap(sq_map_, sq_map_size_);
  if (ring_fd_ >= 0)
    ::close(ring_fd_);
  if (event_fd_ >= 0)
    ::close(event_fd_);
  if (buffers_map_)
    ::munmap(buffers_map_, buffers_map_size_);
}

TURNLOOP_DECL io_uring_sqe* uring_ring::next_sqe() noexcept
{
  // A full queue is submitted early; errors then surface in the entries'
  // completions or at the next submit.
  const unsigned head = __atomic_load_n(sq_head_, __ATOMIC_ACQUIRE);
  if (*sq_tail_ - head >= sq_entries_)
  {
    int error;
    enter(0, error);
  }
  const unsigned tail = *sq_tail_;
  const unsigned index = tail & sq_mask_;
  io_uring_sqe* sqe = &sqes_[index];
  std::memset(sqe, 0, sizeof(*sqe));
  sq_array_[index] = index;
  return sqe;
}

TURNLOOP_DECL void uring_ring::prepare_recv(int fd, unsigned max_size,
    bool poll_first, std::uint64_t user_data, bool alone) noexcept
{
  sq_guard guard(sq_mutex_, alone);
  io_uring_sqe* sqe = next_sqe();
  sqe->opcode = IORING_OP_RECV;
  sqe->fd = fd;
  sqe->len = max_size;
  sqe->flags = IOSQE_BUFFER_SELECT;
  sqe->buf_group = buffer_group;
  if (poll_first)
    sqe->ioprio = IORING_RECVSEND_POLL_FIRST;
  sqe->user_data = user_data;
  __atomic_store_n(sq_tail_, *sq_tail_ + 1, __ATOMIC_RELEASE);
  ++to_submit_;
}

TURNLOOP_DECL void uring_ring::prepare_send(int fd, const void* data,
    unsigned size, std::uint64_t user_data, bool alone) noexcept
{
  sq_guard guard(sq_mutex_, alone);
  io_uring_sqe* sqe = next_sqe();
  sqe->opcode = IORING_OP_SEND;
  sqe->fd = fd;
  sqe->addr = reinterpret_cast<std::uint64_t>(data);
  sqe->len = size;
  sqe->msg_flags = MSG_NOSIGNAL;
  sqe->user_data = user_data;
  __atomic_store_n(sq_tail_, *sq_tail_ + 1, __ATOMIC_RELEASE);
  ++to_submit_;
}

TURNLOOP_DECL void uring_ring::prepare_cancel(std::uint64_t target,
    bool alone) noexcept
{
  sq_guard guard(sq_mutex_, alone);
  io_uring_sqe* sqe = next_sqe();
  sqe->opcode = IORING_OP_ASYNC_CANCEL;
  sqe->fd = -1;
  if (target)
    sqe->addr = target;
  else
    sqe->cancel_flags = IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL;
  sqe->user_data = 0;
  __atomic_store_n(sq_tail_, *sq_tail_ + 1, __ATOMIC_RELEASE);
  ++to_submit_;
}

TURNLOOP_DECL void uring_ring::prepare_poll(int fd, std::uint64_t user_data,
    bool alone) noexcept
{
  sq_guard guard(sq_mutex_, alone);
  io_uring_sqe* sqe = next_sqe();
  sqe->opcode = IORING_OP_POLL_ADD;
  sqe->fd = fd;
  sqe->poll32_events = POLLIN;
  sqe->user_data = user_data;
  __atomic_store_n(sq_tail_, *sq_tail_ + 1, __ATOMIC_RELEASE);
  ++to_submit_;
}

TURNLOOP_DECL bool uring_ring::wait(long usec, int& error, bool alone)
  noexcept
{
  sq_guard guard(sq_mutex_, alone);
  return enter(1, error, usec);
}

TURNLOOP_DECL bool uring_ring::submit(unsigned wait_for, int& error,
    bool alone) noexcept
{
  sq_guard guard(sq_mutex_, alone);
  return enter(wait_for, error);
}

TURNLOOP_DECL bool uring_ring::enter(unsigned wait_for, int& error,
    long usec) noexcept
{
  error = 0;
  if (withdraw_)
  {
    // The kernel reads an entry only when it is submitted: until then it
    // may still be taken back (the queued entries are the last to_submit_
    // before the tail, and sq_array_ maps each position to itself).
    const unsigned tail = *sq_tail_;
    for (unsigned pos = tail - to_submit_; pos != tail; ++pos)
    {
      io_uring_sqe* sqe = &sqes_[pos & sq_mask_];
      const std::uint64_t user_data = sqe->user_data;
      if (user_data && sqe->opcode != IORING_OP_NOP && withdraw_(user_data))
      {
        std::memset(sqe, 0, sizeof(*sqe));
        sqe->opcode = IORING_OP_NOP;
        sqe->fd = -1;
        sqe->user_data = user_data;
      }
    }
  }
  // A timed wait passes its timeout beside the signal mask (EXT_ARG).
  __kernel_timespec timeout{};
  io_uring_getevents_arg arg{};
  const bool timed = wait_for && usec >= 0;
  if (timed)
  {
    timeout.tv_sec = usec / 1000000;
    timeout.tv_nsec = (usec % 1000000) * 1000;
    arg.sigmask_sz = _NSIG / 8;
    arg.ts = reinterpret_cast<std::uint64_t>(&timeout);
  }
  for (;;)
  {
    const unsigned n = to_submit_;
    unsigned flags = 0;
    if (wait_for || (*sq_flags_ & IORING_SQ_TASKRUN)
        || (*sq_flags_ & IORING_SQ_CQ_OVERFLOW))
      flags |= IORING_ENTER_GETEVENTS;
    if (timed)
      flags |= IORING_ENTER_EXT_ARG;
    ++enters_;
    const long r = ::syscall(__NR_io_uring_enter, ring_fd_, n, wait_for,
        flags, timed ? &arg : nullptr, timed ? sizeof(arg) : 0);
    if (r >= 0)
    {
      to_submit_ -= static_cast<unsigned>(r) < n
        ? static_cast<unsigned>(r) : n;
      return true;
    }
    if (errno == ETIME)
      return true; // the timed wait ran out, with nothing to submit
                   // (a submission returns its count, not the timeout)
    if (errno == EINTR)
    {
      // A blocking wait's caller looks again: a signal or a spurious wake
      // ends the wait, as epoll_wait's does.
      return true;
    }
    if (errno == EAGAIN || errno == EBUSY)
    {
      // The kernel is short of memory for requests, or the completion
      // queue has overflowed: completions must be reaped first. The
      // entries stay queued for the next submit.
      return true;
    }
    error = errno;
    return false;
  }
}

TURNLOOP_DECL bool uring_ring::needs_enter() const noexcept
{
  return to_submit_ != 0
    || (__atomic_load_n(sq_flags_, __ATOMIC_RELAXED)
        & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) != 0;
}

TURNLOOP_DECL void uring_ring::provide(void* data, unsigned size,
    unsigned id) noexcept
{
  auto* entries = static_cast<uring_buffer_entry*>(buffers_map_);
  uring_buffer_entry& e = entries[buffer_tail_ & (buffer_slots_ - 1)];
  e.addr = reinterpret_cast<std::uint64_t>(data);
  e.len = size;
  e.bid = static_cast<std::uint16_t>(id);
  ++buffer_tail_;
  __atomic_store_n(&entries[0].tail_or_reserved, buffer_tail_,
      __ATOMIC_RELEASE);
}

TURNLOOP_DECL unsigned uring_ring::withdraw() noexcept
{
  auto* entries = static_cast<uring_buffer_entry*>(buffers_map_);
  --buffer_tail_;
  const unsigned id = entries[buffer_tail_ & (buffer_slots_ - 1)].bid;
  __atomic_store_n(&entries[0].tail_or_reserved, buffer_tail_,
      __ATOMIC_RELEASE);
  return id;
}

} // namespace detail
} // namespace turnloop

#endif // defined(TURNLOOP_HAS_IO_URING_PATH)

#endif // TURNLOOP_DETAIL_URING_IMPL_URING_RING_IPP
