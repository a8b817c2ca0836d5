//
// test/pooled_echo.hpp
//
// Loopback echo over pooled reads, for the pooled-read modules
// (read_pooled_reactor, read_pooled_uring): connected socket pairs on one
// loop, a server session that reads pooled and writes each lease back, and
// a client that checks every byte of messages of varying length; and the
// io_uring modules' switch for machines that refuse io_uring. Included
// after <boost/test/unit_test.hpp>.
//

#ifndef TURNLOOP_TEST_POOLED_ECHO_HPP
#define TURNLOOP_TEST_POOLED_ECHO_HPP

#include <turnloop/loop.hpp>
#include <turnloop/read_pooled.hpp>

#include "asio.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

namespace test {

/// @p n connected pairs on one loop, without Nagle's delays (a message
/// longer than a buffer is echoed in pieces).
/// True if TURNLOOP_TEST_NO_IO_URING=1 asks that io_uring cases be skipped
/// (a container whose seccomp profile refuses io_uring); says so.
inline bool io_uring_skipped()
{
  const char* v = std::getenv("TURNLOOP_TEST_NO_IO_URING");
  if (v && *v == '1')
  {
    BOOST_TEST_MESSAGE("io_uring cases skipped (TURNLOOP_TEST_NO_IO_URING)");
    return true;
  }
  return false;
}

struct connections
{
  connections(turnloop::loop& l, std::size_t n)
  {
    using asio::ip::tcp;
    tcp::acceptor acceptor(l, {asio::ip::address_v4::loopback(), 0});
    for (std::size_t i = 0; i != n; ++i)
    {
      clients.push_back(std::make_unique<tcp::socket>(l));
      servers.push_back(std::make_unique<tcp::socket>(l));
      clients.back()->connect(acceptor.local_endpoint());
      acceptor.accept(*servers.back());
      clients.back()->set_option(tcp::no_delay(true));
      servers.back()->set_option(tcp::no_delay(true));
    }
  }

  std::vector<std::unique_ptr<asio::ip::tcp::socket>> servers;
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> clients;
};

/// Server side of one connection: reads pooled, writes the lease back with
/// @p Write (asio::async_write of the lease's bytes by default), until an
/// error, which it keeps.
class pooled_echo_session
{
public:
  using write_function = std::function<void(asio::ip::tcp::socket&,
      turnloop::buffer_lease, std::function<void(turnloop::error_code)>)>;

  explicit pooled_echo_session(asio::ip::tcp::socket& s,
      write_function write = write_function())
    : socket_(s),
      write_(std::move(write))
  {
  }

  void start()
  {
    turnloop::async_read_pooled(socket_, [this](turnloop::error_code ec,
          turnloop::buffer_lease lease) {
      if (ec)
      {
        ended_with_ = ec;
        return;
      }
      ++reads_;
      auto next = [this](turnloop::error_code ec) {
        if (!ec)
          start();
      };
      if (write_)
        return write_(socket_, std::move(lease), next);
      const asio::const_buffer bytes = lease.data();
      asio::async_write(socket_, bytes,
          [next, lease = std::move(lease)](turnloop::error_code ec,
            std::size_t) { next(ec); });
    });
  }

  long reads() const noexcept
  {
    return reads_;
  }

  turnloop::error_code ended_with() const noexcept
  {
    return ended_with_;
  }

private:
  asio::ip::tcp::socket& socket_;
  write_function write_;
  long reads_ = 0;
  turnloop::error_code ended_with_;
};

/// Client side: writes @p rounds messages of varying length (1 to
/// @p longest bytes) and content, each after the previous one came back
/// whole, checking every byte; then shuts its sending side down.
class echo_client
{
public:
  echo_client(asio::ip::tcp::socket& s, int rounds, std::uint32_t seed,
      std::size_t longest)
    : socket_(s),
      rounds_(rounds),
      seed_(seed),
      out_(longest),
      in_(longest)
  {
  }

  void start()
  {
    if (done_ == hook_round_ && hook_)
      hook_();
    if (done_ == rounds_)
    {
      socket_.shutdown(asio::ip::tcp::socket::shutdown_send);
      return;
    }
    length_ = 1 + next() % out_.size();
    for (std::size_t i = 0; i != length_; ++i)
      out_[i] = static_cast<char>(next());
    asio::async_write(socket_, asio::buffer(out_.data(), length_),
        [this](turnloop::error_code ec, std::size_t) {
          if (ec)
            return;
          asio::async_read(socket_,
              asio::buffer(in_.data(), length_),
              [this](turnloop::error_code ec, std::size_t n) {
                if (ec || n != length_)
                  return;
                for (std::size_t i = 0; i != length_; ++i)
                  if (in_[i] != out_[i])
                    ++mismatches_;
                ++done_;
                start();
              });
        });
  }

  int done() const noexcept
  {
    return done_;
  }

  long mismatches() const noexcept
  {
    return mismatches_;
  }

  /// Calls @p f when round @p round is about to begin.
  void at_round(int round, std::function<void()> f)
  {
    hook_round_ = round;
    hook_ = std::move(f);
  }

private:
  std::uint32_t next() noexcept
  {
    seed_ = seed_ * 1664525u + 1013904223u;
    return seed_ >> 8;
  }

  asio::ip::tcp::socket& socket_;
  int rounds_;
  std::uint32_t seed_;
  std::vector<char> out_;
  std::vector<char> in_;
  std::size_t length_ = 0;
  int done_ = 0;
  long mismatches_ = 0;
  int hook_round_ = -1;
  std::function<void()> hook_;
};

} // namespace test

#endif // TURNLOOP_TEST_POOLED_ECHO_HPP
