//
// bench/memory.cpp
//
// Memory: what an idle context costs (resident set and heap growth across
// constructing it and running one empty turn, one context per process), and
// what an idle keep-alive connection costs a server (resident set slope
// between 0 and N accepted connections, each with a read pending).
//
//   memory idle --side <side> [--config <turnloop config>] [--reactor 1]
//   memory idle_connections --side <side> --connections <n> [--buffer <bytes>]
//   memory idle_connections_pooled --side <side> --connections <n>
//
// idle_connections_pooled is the same server with turnloop's pooled reads
// (turnloop::async_read_pooled): a connection holds no buffer while idle.
// The io_context sides, which have no pooled reads, run the stock server,
// a buffer per connection, so the ratio is pooled reads against what stock
// Asio code holds.
//
// The clients of idle_connections run in a child process (idle_clients.cpp,
// beside this program), so the server's resident set is its own.
//

#include "support/driver.hpp"
#include "support/process.hpp"

#include <turnloop/buffer_pool.hpp>
#include <turnloop/read_pooled.hpp>

#include <turnloop/asio.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

namespace net = turnloop::asio; // Boost.Asio, or standalone Asio

extern char** environ;

using net::ip::tcp;
using turnloop::error_code;

namespace {

// io_context creates its reactor with the first I/O object, turnloop in its
// constructor; --reactor 1 constructs a timer first, so an io_context row
// can be compared with the reactor included.
struct idle_context
{
  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const bool with_reactor = o.number("reactor", 0) != 0;
    bool ran = false;
    const bool prefaulted = bench::prefault_mapped_files();
    r.begin();
    bench::start_counting_allocations();
    const bench::resident_set before = bench::resident();
    auto ctx = make();
    std::optional<net::steady_timer> reactor_user;
    if (with_reactor)
      reactor_user.emplace(*ctx);
    net::post(*ctx, [&ran] { ran = true; });
    ctx->run();
    const bench::resident_set after = bench::resident();
    const bench::allocation_totals heap = bench::stop_counting_allocations();
    r.end();

    if (!ran || before.total_kib < 0 || after.total_kib < 0)
      return bench::result::failed("the empty turn did not run, or "
          "/proc/self/statm could not be read");
    bench::result res;
    res.ops = 1;
    res.metrics = {
      {"resident_kib", double(after.total_kib - before.total_kib)},
      {"anonymous_kib", double(after.anonymous_kib - before.anonymous_kib)},
      {"heap_kib", double(heap.net_bytes) / 1024.0}};
    res.details = {{"heap_allocations", double(heap.allocations)},
      {"code_prefaulted", prefaulted ? 1.0 : 0.0}};
    res.checked = "one context constructed and one posted handler ran";
    return res;
  }
};

// The server side of idle_connections: accepts until `target` connections
// are open, each with a read pending, then measures. A stock read goes into
// the connection's own zero-filled buffer (what stock Asio code holds per
// connection); a pooled read holds no buffer until data arrives.
class idle_server
{
public:
  struct connection
  {
    connection(tcp::socket s, std::size_t buffer_size)
      : socket(std::move(s)),
        buffer(buffer_size)
    {
    }

    tcp::socket socket;
    std::vector<char> buffer;
  };

  template <typename Context>
  idle_server(Context& ctx, std::size_t target, std::size_t buffer_size,
      bool pooled)
    : acceptor_(ctx, tcp::endpoint(net::ip::address_v4::loopback(), 0)),
      target_(target),
      buffer_size_(pooled ? 0 : buffer_size),
      pooled_(pooled)
  {
    connections_.reserve(target);
  }

  unsigned short port() const
  {
    return acceptor_.local_endpoint().port();
  }

  /// Starts accepting; calls @p on_all on the loop's thread once `target`
  /// connections each have a read pending.
  template <typename Function>
  void start(Function on_all)
  {
    acceptor_.async_accept([this, on_all](const error_code& ec, tcp::socket s) {
      if (ec)
        return;
      auto& c = connections_.emplace_back(
          std::make_unique<connection>(std::move(s), buffer_size_));
      if (pooled_)
        turnloop::async_read_pooled(c->socket,
            [this](const error_code&, turnloop::buffer_lease) {
              ++reads_completed_;
            });
      else
        c->socket.async_read_some(net::buffer(c->buffer),
            [this](const error_code&, std::size_t) { ++reads_completed_; });
      if (connections_.size() == target_)
        on_all();
      else
        start(on_all);
    });
  }

  std::size_t connections() const noexcept
  {
    return connections_.size();
  }

  std::uint64_t reads_completed() const noexcept
  {
    return reads_completed_;
  }

private:
  tcp::acceptor acceptor_;
  std::size_t target_;
  std::size_t buffer_size_;
  bool pooled_;
  std::vector<std::unique_ptr<connection>> connections_;
  std::uint64_t reads_completed_ = 0;
};

// The path of program @p name in this program's directory; empty if this
// program's own path cannot be read.
std::string sibling_program(const char* name)
{
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return {};
  std::string path(self, std::size_t(n));
  return path.replace(path.rfind('/') + 1, std::string::npos, name);
}

// Starts idle_clients, from this program's directory, connected to it by
// two pipes: the child exits when its stdin closes, and its stdout closing
// tells the server it has exited (early, if it failed).
struct client_process
{
  pid_t pid = -1;
  int to_child = -1;
  int from_child = -1;

  bool start(unsigned short port, std::size_t connections)
  {
    int in[2];
    int out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
      return false;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    const std::string port_text = std::to_string(port);
    const std::string count_text = std::to_string(connections);
    std::string program = sibling_program("idle_clients");
    if (program.empty())
      return false;
    char* argv[] = {program.data(), const_cast<char*>(port_text.c_str()),
      const_cast<char*>(count_text.c_str()), nullptr};
    const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr,
        argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    to_child = in[1];
    from_child = out[0];
    return rc == 0;
  }

  /// Closes the child's stdin and returns whether it exited with status 0.
  bool finish()
  {
    ::close(to_child);
    int status = 0;
    return ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)
      && WEXITSTATUS(status) == 0;
  }
};

struct idle_connections
{
  bool pooled;

  template <typename Maker>
  bench::result operator()(const Maker& make, const bench::options& o,
      bench::region& r) const
  {
    const std::size_t n = o.number("connections", 8000);
    const std::size_t buffer_size = o.number("buffer", 16 * 1024);
    if (n == 0)
      return bench::result::failed("--connections must be at least 1");
    const bool pooled = this->pooled && bench::is_turnloop<Maker>;
    auto ctx = make();
    idle_server server(*ctx, n, buffer_size, pooled);
    client_process clients;
    net::posix::stream_descriptor client_exit(*ctx);
    char exit_byte = 0;
    bool clients_exited_early = false;
    bench::resident_set before;
    bench::resident_set after;
    bench::allocation_totals heap;

    // The baseline is taken from a handler, so everything a running
    // context has (thread-local caches, the pending accept) is already in it.
    bench::prefault_mapped_files();
    net::post(*ctx, [&] {
      r.begin();
      bench::start_counting_allocations();
      before = bench::resident();
      if (!clients.start(server.port(), n))
        return ctx->stop();
      client_exit.assign(clients.from_child);
      client_exit.async_read_some(net::buffer(&exit_byte, 1),
          [&](const error_code&, std::size_t) {
            clients_exited_early = true;
            ctx->stop();
          });
      server.start([&] {
        after = bench::resident();
        heap = bench::stop_counting_allocations();
        r.end();
        ctx->stop();
      });
    });
    ctx->run_for(std::chrono::seconds(120));
    const bool clients_ok = clients.pid > 0 && clients.finish();

    // With pooled reads, no connection may hold a buffer while idle.
    std::size_t buffers_minted = 0;
    if constexpr (bench::is_turnloop<Maker>)
      if (pooled)
        buffers_minted =
          net::use_service<turnloop::buffer_pool>(*ctx).stats().minted;
    if (buffers_minted != 0)
      return bench::result::failed(std::to_string(buffers_minted)
          + " pooled buffers minted by idle connections");
    if (server.connections() != n || server.reads_completed() != 0
        || clients_exited_early || !clients_ok || !r.complete())
      return bench::result::failed(std::to_string(server.connections())
          + " of " + std::to_string(n) + " connections accepted, "
          + std::to_string(server.reads_completed())
          + " idle reads completed, clients "
          + (clients_ok && !clients_exited_early ? "ok" : "failed")
          + (pooled && server.reads_completed() != 0
              ? " (a pending pooled read is one of config::max_operations:"
                " use --config net)" : ""));
    bench::result res;
    res.ops = n;
    res.metrics = {
      {"resident_bytes_per_connection",
        double(after.total_kib - before.total_kib) * 1024.0 / double(n)},
      {"heap_bytes_per_connection", double(heap.net_bytes) / double(n)}};
    res.details = {
      {"anonymous_bytes_per_connection",
        double(after.anonymous_kib - before.anonymous_kib) * 1024.0 / double(n)},
      {"resident_kib_at_0", double(before.total_kib)},
      {"resident_kib_at_n", double(after.total_kib)},
      {"heap_allocations_per_connection", double(heap.allocations) / double(n)}};
    res.checked = std::to_string(n) + " idle connections accepted, each with "
      + (pooled ? std::string("a pooled read pending, no buffer minted")
          : "a read pending into a " + std::to_string(buffer_size)
            + "-byte buffer");
    return res;
  }
};

} // namespace

std::vector<bench::workload> TURNLOOP_BENCH_WORKLOADS()
{
  return {
    {"idle", bench::on_each_side(idle_context{})},
    {"idle_connections", bench::on_each_side(idle_connections{false})},
    {"idle_connections_pooled", bench::on_each_side(idle_connections{true})},
  };
}
