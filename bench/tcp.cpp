//
// bench/tcp.cpp
//
// TCP over loopback: 64-byte ping-pong latency (client and server on one
// context, or the client on a second thread with its own context of the same
// type), echo throughput over many connections (also with turnloop's pooled
// reads on the server), accept churn, and an HTTP/1.1 keep-alive request
// loop (also with pooled reads). Ping-pong, echo and HTTP also with the
// sockets typed on the context's own executor (the *_typed subcommands:
// turnloop::ip::tcp::socket on a loop, io_objects of io_context's executor
// on io_context) instead of Asio's tcp::socket (any_io_executor).
//

#include "support/driver.hpp"
#include "support/process.hpp"

#include <turnloop/buffer_pool.hpp>
#include <turnloop/io_objects.hpp>
#include <turnloop/read_pooled.hpp>
#include <turnloop/write_lease.hpp>

#include <turnloop/asio.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>


namespace net = turnloop::asio; // Boost.Asio, or standalone Asio

using net::ip::tcp;
using turnloop::error_code;

namespace {

using clock_type = std::chrono::steady_clock;

// 127.0.0.1 with a port the kernel picks.
tcp::endpoint loopback()
{
  return tcp::endpoint(net::ip::address_v4::loopback(), 0);
}

// Fills a message with a byte that differs from one message to the next, so
// that an echo of the wrong message (or of stale buffer contents) is caught.
void fill_message(std::vector<char>& message, std::uint64_t sequence)
{
  std::memset(message.data(), static_cast<int>('a' + sequence % 26),
      message.size());
}

// The socket a workload uses on a context of type Context: Asio's own
// (any_io_executor), or (Typed) the one typed on the context's executor.
template <bool Typed, typename Context>
using socket_for = std::conditional_t<Typed,
  typename turnloop::io_objects<typename Context::executor_type>::ip::tcp::socket,
  tcp::socket>;

// n connected pairs of Sockets, set up synchronously before any context
// runs: the kernel completes each handshake into the listen backlog, so
// connect then accept needs no event loop. Setup is not part of any
// measurement.
template <typename Socket>
struct connected_pairs
{
  std::vector<Socket> servers;
  std::vector<Socket> clients;

  template <typename Context>
  connected_pairs(Context& server_ctx, Context& client_ctx, std::size_t n)
  {
    tcp::acceptor acceptor(server_ctx, loopback());
    servers.reserve(n);
    clients.reserve(n);
    for (std::size_t i = 0; i != n; ++i)
    {
      Socket& c = clients.emplace_back(client_ctx);
      c.connect(acceptor.local_endpoint());
      c.set_option(tcp::no_delay(true));
      Socket& s = servers.emplace_back(server_ctx);
      acceptor.accept(s);
      s.set_option(tcp::no_delay(true));
    }
  }
};

// Echoes whatever arrives until the peer shuts its side down.
template <typename Socket>
class echo_session
{
public:
  using socket_type = Socket;

  echo_session(Socket& socket, std::size_t buffer_size)
    : socket_(socket),
      buffer_(buffer_size)
  {
  }

  void start()
  {
    socket_.async_read_some(net::buffer(buffer_),
        [this](const error_code& ec, std::size_t n) { on_read(ec, n); });
  }

  std::uint64_t bytes() const noexcept
  {
    return bytes_;
  }

  bool ended_cleanly() const noexcept
  {
    return ended_cleanly_;
  }

private:
  void on_read(const error_code& ec, std::size_t n)
  {
    if (ec)
    {
      ended_cleanly_ = ec == net::error::eof;
      socket_.close();
      return;
    }
    bytes_ += n;
    net::async_write(socket_, net::buffer(buffer_.data(), n),
        [this](const error_code& ec, std::size_t) {
          if (ec)
            socket_.close();
          else
            start();
        });
  }

  Socket& socket_;
  std::vector<char> buffer_;
  std::uint64_t bytes_ = 0;
  bool ended_cleanly_ = false;
};

// Echoes like echo_session, but with pooled reads: it holds no buffer
// between messages. The leased buffer is written back with
// async_write_lease and goes back to the loop's pool when it is written.
class pooled_echo_session
{
public:
  using socket_type = tcp::socket;

  pooled_echo_session(tcp::socket& socket, std::size_t)
    : socket_(socket)
  {
  }

  void start()
  {
    turnloop::async_read_pooled(socket_,
        [this](const error_code& ec, turnloop::buffer_lease lease) {
          on_read(ec, std::move(lease));
        });
  }

  std::uint64_t bytes() const noexcept
  {
    return bytes_;
  }

  bool ended_cleanly() const noexcept
  {
    return ended_cleanly_;
  }

private:
  void on_read(const error_code& ec, turnloop::buffer_lease lease)
  {
    if (ec)
    {
      ended_cleanly_ = ec == net::error::eof;
      socket_.close();
      return;
    }
    bytes_ += lease.size();
    // Through the loop's io_uring when pooled reads use it, else
    // asio::async_write (turnloop/write_lease.hpp).
    turnloop::async_write_lease(socket_, std::move(lease),
        [this](const error_code& ec, std::size_t) {
          if (ec)
            socket_.close();
          else
            start();
        });
  }

  tcp::socket& socket_;
  std::uint64_t bytes_ = 0;
  bool ended_cleanly_ = false;
};

// Runs row.run<Session>(make, o, r) with the server session the row's side
// uses: Pooled on turnloop's side of a row with `pooled`, else Stock (the
// io_context sides have no pooled reads, so they run the stock server and
// the row compares the two).
template <typename Stock, typename Pooled, typename Row, typename Maker>
bench::result with_server_session(const Row& row, bool pooled,
    const Maker& make, const bench::options& o, bench::region& r)
{
  if constexpr (bench::is_turnloop<Maker>)
    if (pooled)
      return row.template run<Pooled>(make, o, r);
  return row.template run<Stock>(make, o, r);
}

// The end of a row's `checked`: what the server read with, when it was not
// the stock server.
template <typename Session, typename Pooled>
constexpr const char* server_reading_note()
{
  return std::is_same_v<Session, Pooled> ? ", server reading with pooled reads"
    : "";
}

// The clients of one workload, all run by one thread. The measured region
// begins once every client has finished its warm-up exchanges (so each
// connection's operations have their memory and the caches are warm) and
// ends when the last client has finished; ops are the exchanges completed
// in between.
class client_fleet
{
public:
  client_fleet(std::size_t clients, std::uint64_t warmup, bench::region& r)
    : clients_(clients),
      warmup_(warmup),
      region_(r)
  {
  }

  std::uint64_t warmup() const noexcept
  {
    return warmup_;
  }

  bool measuring() const noexcept
  {
    return warmed_ == clients_;
  }

  /// A client completed its exchange number @p n (counted from 1).
  void on_exchange(std::uint64_t n)
  {
    ++exchanges_;
    if (n == warmup_ && ++warmed_ == clients_)
    {
      exchanges_at_begin_ = exchanges_;
      region_.begin();
    }
  }

  void on_finished()
  {
    if (++finished_ == clients_)
      region_.end();
  }

  std::uint64_t measured_exchanges() const noexcept
  {
    return exchanges_ - exchanges_at_begin_;
  }

private:
  std::size_t clients_;
  std::uint64_t warmup_;
  bench::region& region_;
  std::size_t warmed_ = 0;
  std::size_t finished_ = 0;
  std::uint64_t exchanges_ = 0;
  std::uint64_t exchanges_at_begin_ = 0;
};

// Sends a message, waits for its echo, checks it, repeats; shuts its
// sending side down after the last one.
template <typename Socket>
class echo_client
{
public:
  echo_client(Socket& socket, std::size_t message_size,
      std::uint64_t messages, client_fleet& fleet)
    : socket_(socket),
      out_(message_size),
      in_(message_size),
      target_(messages),
      fleet_(fleet)
  {
  }

  /// Records the duration of each round trip in the measured region.
  void record_round_trips()
  {
    samples_.reserve(target_);
    recording_ = true;
  }

  void start()
  {
    fill_message(out_, done_);
    sent_at_ = clock_type::now();
    net::async_write(socket_, net::buffer(out_),
        [this](const error_code& ec, std::size_t) {
          if (ec)
            return fail();
          net::async_read(socket_, net::buffer(in_),
              [this](const error_code& ec, std::size_t) {
                if (ec)
                  return fail();
                on_echo();
              });
        });
  }

  std::uint64_t done() const noexcept
  {
    return done_;
  }

  std::uint64_t mismatches() const noexcept
  {
    return mismatches_;
  }

  std::vector<std::int64_t>& samples() noexcept
  {
    return samples_;
  }

private:
  void on_echo()
  {
    const clock_type::time_point now = clock_type::now();
    if (std::memcmp(in_.data(), out_.data(), out_.size()) != 0)
      ++mismatches_;
    if (recording_ && fleet_.measuring())
      samples_.push_back((now - sent_at_).count());
    fleet_.on_exchange(++done_);
    if (done_ < target_)
      return start();
    fleet_.on_finished();
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }

  void fail()
  {
    error_code ignored;
    socket_.close(ignored);
  }

  Socket& socket_;
  std::vector<char> out_;
  std::vector<char> in_;
  std::uint64_t target_;
  client_fleet& fleet_;
  std::uint64_t done_ = 0;
  std::uint64_t mismatches_ = 0;
  bool recording_ = false;
  clock_type::time_point sent_at_;
  std::vector<std::int64_t> samples_;
};

// The CPU time of the thread that runs the server, user and system apart
// (less sensitive than messages per second to the clients sharing the
// cores; the system part is the kernel's socket work, which on loopback
// includes the receiving side's TCP processing for every send).
using bench::cpu_seconds;

cpu_seconds server_cpu_seconds_now()
{
  return bench::this_thread_cpu_seconds();
}

cpu_seconds last_server_cpu_seconds;

// Runs @p client_ctx on a second thread while the calling thread runs
// @p server_ctx; returns when both have run out of work.
template <typename Context>
void run_both(Context& server_ctx, Context& client_ctx)
{
  std::thread client([&] { client_ctx.run(); });
  const cpu_seconds before = server_cpu_seconds_now();
  server_ctx.run();
  const cpu_seconds after = server_cpu_seconds_now();
  last_server_cpu_seconds = {after.user - before.user,
    after.system - before.system};
  client.join();
}

// Starts one server and one client session per connected pair, then runs
// both contexts until every session has ended.
template <typename Context, typename Server, typename Client>
void run_sessions(Context& server_ctx, Context& client_ctx,
    std::vector<std::unique_ptr<Server>>& servers,
    std::vector<std::unique_ptr<Client>>& clients)
{
  for (auto& s : servers)
    s->start();
  for (auto& c : clients)
    c->start();
  run_both(server_ctx, client_ctx);
}

double percentile_us(std::vector<std::int64_t>& samples, double fraction)
{
  const std::size_t i = std::min(samples.size() - 1,
      static_cast<std::size_t>(fraction * double(samples.size())));
  std::nth_element(samples.begin(), samples.begin() + i, samples.end());
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(
        clock_type::duration(samples[i])).count()) / 1000.0;
}

// One connection, one 64-byte message in flight. The median and the 99th
// percentile come from the per-round-trip samples of this run.
// With `pooled`, turnloop's server reads with async_read_pooled and writes
// the lease back (the io_context sides run the stock server). Typed: every
// socket typed on the context's executor.
template <bool Typed>
struct ping_pong
{
  bool client_on_own_thread;
  bool pooled = false;

  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    using socket = socket_for<Typed, typename Maker::context_type>;
    return with_server_session<echo_session<socket>, pooled_echo_session>(
        *this, pooled, make, o, r);
  }

  template <typename Session, typename Maker>
  bench::result run(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const std::uint64_t n = o.number("round_trips", 100'000);
    const std::uint64_t warmup = n / 10 + 1;
    const std::size_t size = o.number("bytes", 64);
    auto server_ctx = make();
    auto client_ctx = client_on_own_thread ? make() : nullptr;
    auto& cctx = client_on_own_thread ? *client_ctx : *server_ctx;

    using socket = typename Session::socket_type;
    connected_pairs<socket> pair(*server_ctx, cctx, 1);
    Session server(pair.servers[0], size);
    client_fleet fleet(1, warmup, r);
    echo_client<socket> client(pair.clients[0], size, warmup + n, fleet);
    client.record_round_trips();
    server.start();
    client.start();
    if (client_on_own_thread)
      run_both(*server_ctx, cctx);
    else
      server_ctx->run();

    if (client.done() != warmup + n || client.mismatches() != 0
        || server.bytes() != (warmup + n) * size || !server.ended_cleanly()
        || fleet.measured_exchanges() != n || client.samples().size() != n
        || n == 0)
      return bench::result::failed(std::to_string(client.done()) + " of "
          + std::to_string(warmup + n) + " round trips, "
          + std::to_string(client.mismatches()) + " wrong echoes, "
          + std::to_string(server.bytes()) + " bytes echoed");
    bench::result res;
    res.ops = n;
    std::vector<std::int64_t>& samples = client.samples();
    res.metrics = {
      {"round_trip_median_us", percentile_us(samples, 0.5)},
      {"round_trip_p99_us", percentile_us(samples, 0.99)}};
    res.details = {{"round_trips_per_s", double(n) / r.seconds()}};
    res.checked = std::to_string(warmup + n) + " echoes of "
      + std::to_string(size) + " bytes matched"
      + server_reading_note<Session, pooled_echo_session>();
    bench::add_loop_stats(res, *server_ctx);
    return res;
  }
};

// Many connections, one message each in flight; the clients run on a second
// thread with their own context of the same type. With `pooled`, turnloop's
// server reads with async_read_pooled, and the io_context sides, which have
// no pooled reads, run the stock server: the row compares the two.
// Typed: every socket typed on the context's executor.
template <bool Typed>
struct echo
{
  bool pooled;

  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    using socket = socket_for<Typed, typename Maker::context_type>;
    return with_server_session<echo_session<socket>, pooled_echo_session>(
        *this, pooled, make, o, r);
  }

  template <typename Session, typename Maker>
  bench::result run(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const std::size_t connections = o.number("connections", 64);
    const std::uint64_t per_connection = o.number("messages", 1000);
    const std::size_t size = o.number("bytes", 1024);
    const std::uint64_t warmup = per_connection / 10 + 1;
    auto server_ctx = make();
    auto client_ctx = make();

    using socket = typename Session::socket_type;
    connected_pairs<socket> pairs(*server_ctx, *client_ctx, connections);
    client_fleet fleet(connections, warmup, r);
    std::vector<std::unique_ptr<Session>> servers;
    std::vector<std::unique_ptr<echo_client<socket>>> clients;
    for (std::size_t i = 0; i != connections; ++i)
    {
      servers.push_back(std::make_unique<Session>(pairs.servers[i], size));
      clients.push_back(std::make_unique<echo_client<socket>>(pairs.clients[i],
            size, warmup + per_connection, fleet));
    }

    run_sessions(*server_ctx, *client_ctx, servers, clients);

    const std::uint64_t messages = connections * (warmup + per_connection);
    std::uint64_t done = 0;
    std::uint64_t mismatches = 0;
    std::uint64_t bytes = 0;
    bool clean = true;
    for (std::size_t i = 0; i != connections; ++i)
    {
      done += clients[i]->done();
      mismatches += clients[i]->mismatches();
      bytes += servers[i]->bytes();
      clean = clean && servers[i]->ended_cleanly();
    }
    if (done != messages || mismatches != 0 || bytes != messages * size || !clean)
      return bench::result::failed(std::to_string(done) + " of "
          + std::to_string(messages) + " messages echoed, "
          + std::to_string(mismatches) + " wrong, " + std::to_string(bytes)
          + " bytes at the server");
    bench::result res;
    res.ops = fleet.measured_exchanges();
    res.metrics = {{"messages_per_s", double(res.ops) / r.seconds()}};
    res.details = {{"bytes_per_s", double(res.ops * size) / r.seconds()},
      {"server_cpu_us_per_message", (last_server_cpu_seconds.user
          + last_server_cpu_seconds.system) * 1e6 / double(messages)},
      {"server_user_us_per_message",
        last_server_cpu_seconds.user * 1e6 / double(messages)},
      {"server_system_us_per_message",
        last_server_cpu_seconds.system * 1e6 / double(messages)}};
    res.checked = std::to_string(messages) + " echoes of "
      + std::to_string(size) + " bytes matched over "
      + std::to_string(connections) + " connections"
      + server_reading_note<Session, pooled_echo_session>();
    bench::add_loop_stats(res, *server_ctx);
    if constexpr (std::is_same_v<Session, pooled_echo_session>)
    {
      const turnloop::buffer_pool_stats pool =
        net::use_service<turnloop::buffer_pool>(*server_ctx).stats();
      res.details.emplace_back("pool_buffers_minted", double(pool.minted));
      res.details.emplace_back("pool_leased_high_water",
          double(pool.leased_high_water));
      res.details.emplace_back("pool_waits", double(pool.waits));
      // On the ring's path the server's only per-message system calls are
      // the ring's enters and epoll's waits (the ring sends and receives),
      // so their sum per message is its system calls per message, counted
      // without strace (which slows what it counts).
      if (pool.path == turnloop::io_path::io_uring)
        res.details.emplace_back("server_syscalls_per_message",
            double(pool.io_uring_enters + server_ctx->stats().epoll_waits)
              / double(messages));
      res.details.emplace_back("pool_io_uring_waits",
          pool.io_uring_waits ? 1.0 : 0.0);
    }
    return res;
  }
};

constexpr std::string_view churn_request = "request-16-bytes";
constexpr std::string_view churn_reply = "reply-is-16bytes";

// Accepts until the target is reached; each connection reads the request,
// writes the reply and closes.
class churn_server
{
public:
  template <typename Context>
  churn_server(Context& ctx, std::uint64_t target)
    : acceptor_(ctx, loopback()),
      target_(target)
  {
  }

  tcp::endpoint endpoint() const
  {
    return acceptor_.local_endpoint();
  }

  void start()
  {
    acceptor_.async_accept([this](const error_code& ec, tcp::socket s) {
      if (ec)
        return;
      ++accepted_;
      serve(std::make_shared<connection>(std::move(s)));
      if (accepted_ < target_)
        start();
    });
  }

  std::uint64_t accepted() const noexcept
  {
    return accepted_;
  }

  std::uint64_t served() const noexcept
  {
    return served_;
  }

private:
  struct connection
  {
    explicit connection(tcp::socket s)
      : socket(std::move(s))
    {
    }

    tcp::socket socket;
    char request[churn_request.size()];
  };

  void serve(std::shared_ptr<connection> c)
  {
    net::async_read(c->socket, net::buffer(c->request),
        [this, c](const error_code& ec, std::size_t) {
          if (ec || std::string_view(c->request, sizeof c->request) != churn_request)
            return;
          net::async_write(c->socket, net::buffer(churn_reply),
              [this, c](const error_code& ec, std::size_t) {
                if (!ec)
                  ++served_;
                error_code ignored;
                c->socket.close(ignored);
              });
        });
  }

  tcp::acceptor acceptor_;
  std::uint64_t target_;
  std::uint64_t accepted_ = 0;
  std::uint64_t served_ = 0;
};

// One of several concurrent clients: connect, write, read, close, repeat
// while the shared count of started connections is below the target. It
// closes with linger 0 (a reset), so no TIME_WAIT piles up on either side
// and ephemeral ports do not run out across runs.
class churn_client
{
public:
  template <typename Context>
  churn_client(Context& ctx, tcp::endpoint server, std::uint64_t& started,
      std::uint64_t target)
    : socket_(ctx),
      server_(server),
      started_(started),
      target_(target)
  {
  }

  void start()
  {
    if (started_ == target_)
      return;
    ++started_;
    socket_.async_connect(server_, [this](const error_code& ec) {
      if (ec)
        return fail();
      net::async_write(socket_, net::buffer(churn_request),
          [this](const error_code& ec, std::size_t) {
            if (ec)
              return fail();
            net::async_read(socket_, net::buffer(reply_),
                [this](const error_code& ec, std::size_t) {
                  if (ec)
                    return fail();
                  if (std::string_view(reply_, sizeof reply_) == churn_reply)
                    ++completed_;
                  socket_.set_option(net::socket_base::linger(true, 0));
                  socket_.close();
                  start();
                });
          });
    });
  }

  std::uint64_t completed() const noexcept
  {
    return completed_;
  }

private:
  void fail()
  {
    error_code ignored;
    socket_.close(ignored);
  }

  tcp::socket socket_;
  tcp::endpoint server_;
  std::uint64_t& started_;
  std::uint64_t target_;
  std::uint64_t completed_ = 0;
  char reply_[churn_reply.size()];
};

struct accept_churn
{
  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const std::uint64_t n = o.number("connections", 20'000);
    const std::size_t concurrency = o.number("concurrency", 32);
    if (n == 0 || concurrency == 0)
      return bench::result::failed(
          "--connections and --concurrency must be at least 1");
    auto server_ctx = make();
    auto client_ctx = make();
    churn_server server(*server_ctx, n);
    std::uint64_t started = 0;
    std::vector<std::unique_ptr<churn_client>> clients;
    for (std::size_t i = 0; i != concurrency; ++i)
      clients.push_back(std::make_unique<churn_client>(*client_ctx,
            server.endpoint(), started, n));

    r.begin();
    server.start();
    for (auto& c : clients)
      c->start();
    run_both(*server_ctx, *client_ctx);
    r.end();

    std::uint64_t completed = 0;
    for (auto& c : clients)
      completed += c->completed();
    if (server.accepted() != n || server.served() != n || completed != n)
      return bench::result::failed(std::to_string(server.accepted())
          + " accepted, " + std::to_string(server.served()) + " served, "
          + std::to_string(completed) + " replies checked, of "
          + std::to_string(n));
    bench::result res;
    res.ops = n;
    res.metrics = {{"accepts_per_s", double(n) / r.seconds()}};
    res.checked = std::to_string(n) + " connections accepted, served and "
      "their replies checked, " + std::to_string(concurrency) + " at a time";
    bench::add_loop_stats(res, *server_ctx);
    return res;
  }
};

constexpr std::string_view http_request =
  "GET /hello HTTP/1.1\r\nHost: bench\r\nUser-Agent: turnloop-bench\r\n\r\n";
constexpr std::string_view http_body = "Hello, world!";
constexpr std::string_view http_response =
  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n"
  "Connection: keep-alive\r\n\r\nHello, world!";

// Reads a request head, checks it, writes the fixed response, repeats.
template <typename Socket>
class http_server_session
{
public:
  using socket_type = Socket;

  explicit http_server_session(Socket& socket)
    : socket_(socket)
  {
    in_.reserve(1024);
  }

  void start()
  {
    net::async_read_until(socket_, net::dynamic_buffer(in_), "\r\n\r\n",
        [this](const error_code& ec, std::size_t head) {
          if (ec)
          {
            ended_cleanly_ = ec == net::error::eof && in_.empty();
            socket_.close();
            return;
          }
          if (std::string_view(in_).substr(0, head) != http_request)
          {
            socket_.close();
            return;
          }
          in_.erase(0, head);
          ++requests_;
          net::async_write(socket_, net::buffer(http_response),
              [this](const error_code& ec, std::size_t) {
                if (!ec)
                  start();
              });
        });
  }

  std::uint64_t requests() const noexcept
  {
    return requests_;
  }

  bool ended_cleanly() const noexcept
  {
    return ended_cleanly_;
  }

private:
  Socket& socket_;
  std::string in_;
  std::uint64_t requests_ = 0;
  bool ended_cleanly_ = false;
};

// Serves like http_server_session, but with pooled reads: between requests
// it holds no buffer. A request split across reads is carried over in a
// string, empty when requests arrive whole (the usual case here).
class pooled_http_server_session
{
public:
  using socket_type = tcp::socket;

  explicit pooled_http_server_session(tcp::socket& socket)
    : socket_(socket)
  {
  }

  void start()
  {
    turnloop::async_read_pooled(socket_,
        [this](const error_code& ec, turnloop::buffer_lease lease) {
          on_read(ec, std::move(lease));
        });
  }

  std::uint64_t requests() const noexcept
  {
    return requests_;
  }

  bool ended_cleanly() const noexcept
  {
    return ended_cleanly_;
  }

private:
  void on_read(const error_code& ec, turnloop::buffer_lease lease)
  {
    if (ec)
    {
      ended_cleanly_ = ec == net::error::eof && carried_.empty();
      socket_.close();
      return;
    }
    std::string_view data(static_cast<const char*>(lease.data().data()),
        lease.size());
    if (!carried_.empty())
    {
      carried_.append(data);
      data = carried_;
    }
    std::size_t parsed = 0;
    std::uint64_t heads = 0;
    for (std::size_t end; (end = data.find("\r\n\r\n", parsed))
        != data.npos; parsed = end + 4, ++heads)
      if (data.substr(parsed, end + 4 - parsed) != http_request)
      {
        socket_.close();
        return;
      }
    carried_ = std::string(data.substr(parsed));
    requests_ += heads;
    respond(heads);
  }

  // Writes @p n responses, then reads again.
  void respond(std::uint64_t n)
  {
    if (n == 0)
      return start();
    net::async_write(socket_, net::buffer(http_response),
        [this, n](const error_code& ec, std::size_t) {
          if (!ec)
            respond(n - 1);
        });
  }

  tcp::socket& socket_;
  std::string carried_;
  std::uint64_t requests_ = 0;
  bool ended_cleanly_ = false;
};

// Sends a request, reads the head, then the body its Content-Length
// announces, checks both, repeats.
template <typename Socket>
class http_client_session
{
public:
  http_client_session(Socket& socket, std::uint64_t requests,
      client_fleet& fleet)
    : socket_(socket),
      target_(requests),
      fleet_(fleet)
  {
    in_.reserve(1024);
  }

  void start()
  {
    net::async_write(socket_, net::buffer(http_request),
        [this](const error_code& ec, std::size_t) {
          if (ec)
            return;
          net::async_read_until(socket_, net::dynamic_buffer(in_),
              "\r\n\r\n", [this](const error_code& ec, std::size_t head) {
                if (!ec)
                  on_head(head);
              });
        });
  }

  std::uint64_t completed() const noexcept
  {
    return completed_;
  }

private:
  void on_head(std::size_t head)
  {
    const std::string_view text(in_.data(), head);
    constexpr std::string_view length_field = "Content-Length: ";
    const std::size_t field = text.find(length_field);
    if (!text.starts_with("HTTP/1.1 200 ") || field == text.npos)
      return;
    const std::size_t length = std::strtoul(
        text.data() + field + length_field.size(), nullptr, 10);
    const std::size_t total = head + length;
    if (in_.size() >= total)
      return on_response(head, length);
    net::async_read(socket_, net::dynamic_buffer(in_),
        net::transfer_exactly(total - in_.size()),
        [this, head, length](const error_code& ec, std::size_t) {
          if (!ec)
            on_response(head, length);
        });
  }

  void on_response(std::size_t head, std::size_t length)
  {
    if (std::string_view(in_).substr(head, length) == http_body)
      ++completed_;
    in_.erase(0, head + length);
    fleet_.on_exchange(++sent_);
    if (sent_ < target_)
      return start();
    fleet_.on_finished();
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }

  Socket& socket_;
  std::uint64_t target_;
  client_fleet& fleet_;
  std::uint64_t sent_ = 0;
  std::uint64_t completed_ = 0;
  std::string in_;
};

// With `pooled`, turnloop's server reads with async_read_pooled; the
// io_context sides run the stock server, as in echo. Typed: every socket
// typed on the context's executor.
template <bool Typed>
struct http
{
  bool pooled;

  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    using socket = socket_for<Typed, typename Maker::context_type>;
    return with_server_session<http_server_session<socket>,
        pooled_http_server_session>(*this, pooled, make, o, r);
  }

  template <typename Session, typename Maker>
  bench::result run(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const std::size_t connections = o.number("connections", 64);
    const std::uint64_t per_connection = o.number("requests", 1000);
    const std::uint64_t warmup = per_connection / 10 + 1;
    auto server_ctx = make();
    auto client_ctx = make();

    using socket = typename Session::socket_type;
    connected_pairs<socket> pairs(*server_ctx, *client_ctx, connections);
    client_fleet fleet(connections, warmup, r);
    std::vector<std::unique_ptr<Session>> servers;
    std::vector<std::unique_ptr<http_client_session<socket>>> clients;
    for (std::size_t i = 0; i != connections; ++i)
    {
      servers.push_back(std::make_unique<Session>(pairs.servers[i]));
      clients.push_back(std::make_unique<http_client_session<socket>>(
            pairs.clients[i], warmup + per_connection, fleet));
    }

    run_sessions(*server_ctx, *client_ctx, servers, clients);

    const std::uint64_t requests = connections * (warmup + per_connection);
    std::uint64_t served = 0;
    std::uint64_t completed = 0;
    bool clean = true;
    for (std::size_t i = 0; i != connections; ++i)
    {
      served += servers[i]->requests();
      completed += clients[i]->completed();
      clean = clean && servers[i]->ended_cleanly();
    }
    if (served != requests || completed != requests || !clean)
      return bench::result::failed(std::to_string(served) + " served, "
          + std::to_string(completed) + " responses checked, of "
          + std::to_string(requests));
    bench::result res;
    res.ops = fleet.measured_exchanges();
    res.metrics = {{"requests_per_s", double(res.ops) / r.seconds()}};
    res.checked = std::to_string(requests) + " requests parsed and "
      "responses checked over " + std::to_string(connections)
      + " keep-alive connections"
      + server_reading_note<Session, pooled_http_server_session>();
    bench::add_loop_stats(res, *server_ctx);
    return res;
  }
};

} // namespace

std::vector<bench::workload> TURNLOOP_BENCH_WORKLOADS()
{
  return {
    {"ping_pong", bench::on_each_side(ping_pong<false>{false})},
    {"ping_pong_threads", bench::on_each_side(ping_pong<false>{true})},
    {"ping_pong_pooled", bench::on_each_side(ping_pong<false>{false, true})},
    {"echo", bench::on_each_side(echo<false>{false})},
    {"echo_pooled", bench::on_each_side(echo<false>{true})},
    {"accept_churn", bench::on_each_side(accept_churn{})},
    {"http", bench::on_each_side(http<false>{false})},
    {"http_pooled", bench::on_each_side(http<false>{true})},
    {"ping_pong_typed", bench::on_each_side(ping_pong<true>{false})},
    {"echo_typed", bench::on_each_side(echo<true>{false})},
    {"http_typed", bench::on_each_side(http<true>{false})},
  };
}
