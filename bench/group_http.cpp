//
// bench/group_http.cpp
//
// HTTP/1.1 keep-alive requests per second, and per CPU-second of the server,
// for a server on T threads (1 or 2) built three ways:
//
//   io_context        one io_context, run() from T threads, one acceptor
//   io_context_each   one io_context(1) per thread, SO_REUSEPORT acceptors
//                     (the hand-made "context per core")
//   loop_group        turnloop::loop_group(T) with SO_REUSEPORT acceptors,
//                     one per loop (turnloop::sharded_acceptor's shape)
//   loop_group_handoff
//                     turnloop::loop_group(T) with one acceptor on loop 0
//                     handing each socket to the next loop round robin
//                     (turnloop::group_acceptor's shape: turnloop::
//                     async_accept with the next loop's executor)
//   loop_group_handoff_native
//                     the same with acceptor and sockets on turnloop::
//                     loop::executor_type instead of any_io_executor
//                     (group_acceptor<tcp, turnloop::loop::executor_type>)
//   sharded_acceptor  loop_group(T) with SO_REUSEPORT acceptors, accepting
//                     with turnloop::async_accept (max_handles per loop, as
//                     turnloop::sharded_acceptor is documented to be used;
//                     loop_group accepts with Asio's own async_accept)
//   group_acceptor_rr turnloop::group_acceptor<> itself, placement::
//                     round_robin
//   group_acceptor_lc turnloop::group_acceptor<> itself, placement::
//                     least_connections (its default)
//
// The server is a child process (so its CPU time is its own, read from
// /proc/<pid>/stat over the measured window); the load generator is this
// process: C keep-alive connections on two threads, each connection sending
// one request and waiting for its response, over and over. Every side runs
// the same session code; only the context differs. bench/group_http.py runs
// the sides interleaved and reports medians and ratios.
//
// With --reconnect R a client closes its connection after every R responses
// (with a reset, SO_LINGER 0, so that no port is left in TIME_WAIT) and
// connects again: accept churn. --churn half makes only every other client
// (the odd ones) do so, the rest keeping theirs: connections of unequal
// lifetimes, where a group_acceptor's placement matters. The server reports
// how many connections it accepted, and, on the group_acceptor sides, how
// many each loop held when it stopped.
//
//   group_http --side <side> --threads T --connections C [--ms M]
//              [--reconnect R] [--churn all|half]
//
// Prints one JSON object. Exit status 0 measured, 1 the run failed its
// checks (a response missing or malformed), 2 bad command line.
//

#include <turnloop/accept.hpp>
#include <turnloop/group_acceptor.hpp>
#include <turnloop/loop_group.hpp>

#include <turnloop/asio.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <csignal>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace net = turnloop::asio; // Boost.Asio, or standalone Asio

using net::ip::tcp;

namespace {

constexpr std::string_view request =
  "GET / HTTP/1.1\r\nHost: bench\r\nUser-Agent: group_http\r\n\r\n";
constexpr std::string_view response =
  "HTTP/1.1 200 OK\r\nServer: bench\r\nContent-Type: text/plain\r\n"
  "Content-Length: 13\r\n\r\nHello, world!";

// --- the server: the same session on every side -----------------------------

// Requests answered by the server, summed as sessions end (so that counting
// costs the sessions nothing shared while they run); the server reports it
// at exit, for instructions per request under callgrind.
std::atomic<std::uint64_t> answered{0};

// Connections accepted, counted by the accepting handlers.
std::atomic<std::uint64_t> accepted{0};

// The group_acceptor sides: each loop's live connections when the server
// stopped.
std::array<std::uint64_t, 2> live_at_stop{0, 0};

// Reads requests, counts the complete ones (ended by an empty line) and
// writes one response for each.
template <typename Socket>
class session : public std::enable_shared_from_this<session<Socket>>
{
public:
  explicit session(Socket s) : socket_(std::move(s)) {}

  ~session()
  {
    answered.fetch_add(answered_, std::memory_order_relaxed);
  }

  void start()
  {
    read();
  }

private:
  void read()
  {
    socket_.async_read_some(net::buffer(in_),
        [self = this->shared_from_this()](turnloop::error_code ec,
            std::size_t n) { self->on_read(ec, n); });
  }

  void on_read(turnloop::error_code ec, std::size_t n)
  {
    if (ec)
      return;
    std::size_t complete = 0;
    for (std::size_t i = 0; i < n; ++i)
    {
      // Matches "\r\n\r\n" across reads.
      const char c = in_[i];
      const char want = "\r\n\r\n"[matched_];
      matched_ = (c == want) ? matched_ + 1 : (c == '\r' ? 1 : 0);
      if (matched_ == 4)
      {
        ++complete;
        matched_ = 0;
      }
    }
    if (complete == 0)
      return read();
    answered_ += complete;
    out_.clear();
    for (std::size_t k = 0; k < complete; ++k)
      out_.append(response);
    net::async_write(socket_, net::buffer(out_),
        [self = this->shared_from_this()](turnloop::error_code ec,
            std::size_t) {
          if (!ec)
            self->read();
        });
  }

  Socket socket_;
  std::uint64_t answered_ = 0;
  std::array<char, 4096> in_;
  std::string out_;
  int matched_ = 0;
};

// Counts an accepted socket and starts its session on this thread.
template <typename Socket>
void start_here(Socket s)
{
  accepted.fetch_add(1, std::memory_order_relaxed);
  s.set_option(tcp::no_delay(true));
  std::make_shared<session<Socket>>(std::move(s))->start();
}

template <typename Acceptor>
void accept_on(Acceptor& acceptor)
{
  acceptor.async_accept([&acceptor](turnloop::error_code ec,
      typename Acceptor::protocol_type::socket s) {
    if (ec == net::error::operation_aborted)
      return;
    if (!ec)
      start_here(std::move(s));
    accept_on(acceptor);
  });
}

// accept_on with turnloop::async_accept: each connection holds one of the
// loop's max_handles handles.
void capped_accept_on(tcp::acceptor& acceptor)
{
  turnloop::async_accept(acceptor, [&acceptor](turnloop::error_code ec,
      turnloop::accepted_socket<tcp> s) {
    if (ec == net::error::operation_aborted)
      return;
    if (!ec)
      start_here(std::move(s));
    capped_accept_on(acceptor);
  });
}

// Starts a session for @p s on the socket's own loop.
template <typename Socket>
void start_on_its_loop(Socket s)
{
  accepted.fetch_add(1, std::memory_order_relaxed);
  s.set_option(tcp::no_delay(true));
  const auto on = s.get_executor();
  net::post(on, [s = std::move(s)]() mutable {
    std::make_shared<session<Socket>>(std::move(s))->start();
  });
}

// Accepts on loop 0's acceptor, each socket built on the next loop and its
// session started there.
template <typename Executor>
void hand_off(net::basic_socket_acceptor<tcp, Executor>& acceptor,
    turnloop::loop_group& group, std::size_t& next)
{
  using socket_type = turnloop::accepted_socket<tcp, Executor>;
  const Executor ex(group.loop(next).get_executor());
  next = (next + 1) % group.size();
  turnloop::async_accept(acceptor, ex, [&acceptor, &group, &next](
      turnloop::error_code ec, socket_type s) {
    if (ec == net::error::operation_aborted)
      return;
    if (!ec)
      start_on_its_loop(std::move(s));
    hand_off(acceptor, group, next);
  });
}

// turnloop::group_acceptor's own accept loop: the same steps as hand_off.
void deal(turnloop::group_acceptor<>& acceptor)
{
  using socket_type = turnloop::group_acceptor<>::socket_type;
  acceptor.async_accept([&acceptor](turnloop::error_code ec,
      socket_type s) {
    if (ec == net::error::operation_aborted)
      return;
    if (!ec)
      start_on_its_loop(std::move(s));
    deal(acceptor);
  });
}

// The listening sockets are made by the parent (so it knows the port before
// the child runs) and handed to the child by descriptor.
void serve(const std::string& side, std::size_t threads,
    const std::vector<int>& listeners, int ready_fd)
{
  auto signal_ready = [&] {
    char c = 1;
    (void)!::write(ready_fd, &c, 1);
  };
  if (side == "io_context")
  {
    net::io_context ctx(static_cast<int>(threads));
    tcp::acceptor a(ctx);
    a.assign(tcp::v4(), listeners[0]);
    accept_on(a);
    net::signal_set stop(ctx, SIGTERM);
    stop.async_wait([&](auto, int) { ctx.stop(); });
    std::vector<std::thread> others;
    for (std::size_t i = 1; i < threads; ++i)
      others.emplace_back([&] { ctx.run(); });
    signal_ready();
    ctx.run();
    for (auto& t : others)
      t.join();
  }
  else if (side == "io_context_each")
  {
    std::vector<std::unique_ptr<net::io_context>> ctxs;
    std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
    for (std::size_t i = 0; i < threads; ++i)
    {
      ctxs.push_back(std::make_unique<net::io_context>(1));
      acceptors.push_back(std::make_unique<tcp::acceptor>(*ctxs[i]));
      acceptors[i]->assign(tcp::v4(), listeners[i]);
      accept_on(*acceptors[i]);
    }
    net::signal_set stop(*ctxs[0], SIGTERM);
    stop.async_wait([&](auto, int) {
      for (auto& c : ctxs)
        c->stop();
    });
    std::vector<std::thread> others;
    for (std::size_t i = 1; i < threads; ++i)
      others.emplace_back([&, i] { ctxs[i]->run(); });
    signal_ready();
    ctxs[0]->run();
    for (auto& t : others)
      t.join();
  }
  else if (side == "group_acceptor_rr" || side == "group_acceptor_lc")
  {
    turnloop::loop_group group(threads);
    tcp::acceptor listening(group.loop(0));
    listening.assign(tcp::v4(), listeners[0]);
    // The parent's listener, adopted: group_acceptor opens its own, so
    // this one is handed over by descriptor instead.
    turnloop::group_acceptor<> a(group, tcp::endpoint(tcp::v4(), 0),
        side == "group_acceptor_rr" ? turnloop::placement::round_robin
          : turnloop::placement::least_connections);
    a.acceptor().close();
    a.acceptor().assign(tcp::v4(), listening.release());
    deal(a);
    net::signal_set stop(group.loop(0), SIGTERM);
    stop.async_wait([&](auto, int) {
      for (std::size_t i = 0; i < threads && i < live_at_stop.size(); ++i)
        live_at_stop[i] = a.connections(i);
      group.stop();
    });
    signal_ready();
    group.run();
  }
  else if (side == "loop_group_handoff" || side == "loop_group_handoff_native")
  {
    turnloop::loop_group group(threads);
    tcp::acceptor a(group.loop(0));
    net::basic_socket_acceptor<tcp, turnloop::loop::executor_type> native(
        group.loop(0).get_executor());
    std::size_t next = 0;
    if (side == "loop_group_handoff")
    {
      a.assign(tcp::v4(), listeners[0]);
      hand_off(a, group, next);
    }
    else
    {
      native.assign(tcp::v4(), listeners[0]);
      hand_off(native, group, next);
    }
    net::signal_set stop(group.loop(0), SIGTERM);
    stop.async_wait([&](auto, int) { group.stop(); });
    signal_ready();
    group.run();
  }
  else
  {
    turnloop::loop_group group(threads);
    std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
    for (std::size_t i = 0; i < threads; ++i)
    {
      acceptors.push_back(std::make_unique<tcp::acceptor>(group.loop(i)));
      acceptors[i]->assign(tcp::v4(), listeners[i]);
      if (side == "sharded_acceptor")
        capped_accept_on(*acceptors[i]);
      else
        accept_on(*acceptors[i]);
    }
    net::signal_set stop(group.loop(0), SIGTERM);
    stop.async_wait([&](auto, int) { group.stop(); });
    signal_ready();
    group.run();
  }
}

// --- the load generator ------------------------------------------------------

struct client
{
  client(net::io_context& ctx, std::atomic<bool>& r, tcp::endpoint to,
      std::size_t reconnect)
    : socket(ctx), running(&r), to(to), reconnect(reconnect)
  {
  }

  tcp::socket socket;
  std::array<char, 1024> in;
  std::size_t got = 0;
  std::atomic<bool>* running;
  std::atomic<std::uint64_t> done{0}; // written by its generator thread only
  bool bad = false;
  tcp::endpoint to;
  std::size_t reconnect; // responses per connection; 0: keep it
  std::size_t on_this = 0;

  // Resets the connection (no TIME_WAIT) and opens a new one.
  void again()
  {
    socket.set_option(net::socket_base::linger(true, 0));
    socket.close();
    on_this = 0;
    socket.async_connect(to, [this](turnloop::error_code ec) {
      if (ec)
      {
        bad = true;
        return;
      }
      socket.set_option(tcp::no_delay(true));
      send();
    });
  }

  void send()
  {
    net::async_write(socket, net::buffer(request),
        [this](turnloop::error_code ec, std::size_t) {
          if (ec)
          {
            bad = true;
            return;
          }
          got = 0;
          receive();
        });
  }

  void receive()
  {
    socket.async_read_some(net::buffer(in.data() + got, in.size() - got),
        [this](turnloop::error_code ec, std::size_t n) {
          if (ec)
          {
            bad = true;
            return;
          }
          got += n;
          if (got < response.size())
            return receive();
          if (got != response.size()
              || std::string_view(in.data(), got) != response)
          {
            bad = true;
            return;
          }
          done.store(done.load(std::memory_order_relaxed) + 1,
              std::memory_order_relaxed);
          if (!running->load(std::memory_order_relaxed))
            return;
          if (reconnect != 0 && ++on_this == reconnect)
            return again();
          send();
        });
  }
};

// utime + stime of @p pid, in seconds.
double cpu_seconds(pid_t pid)
{
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  // Fields after the command name, which is in parentheses.
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i)
  {
    if (i == 14)
      utime = std::stoull(field);
    if (i == 15)
      stime = std::stoull(field);
  }
  return double(utime + stime) / double(::sysconf(_SC_CLK_TCK));
}

int listener(unsigned short port, bool reuse_port)
{
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuse_port)
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0
      || ::listen(fd, 4096) != 0)
  {
    std::perror("bind/listen");
    std::exit(1);
  }
  return fd;
}

unsigned short port_of(int fd)
{
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

} // namespace

int main(int argc, char** argv)
{
  std::string side, churn = "all";
  std::size_t threads = 2, connections = 64, ms = 2000, reconnect = 0;
  for (int i = 1; i + 1 < argc; i += 2)
  {
    const std::string key = argv[i];
    const std::string value = argv[i + 1];
    if (key == "--side")
      side = value;
    else if (key == "--threads")
      threads = std::stoul(value);
    else if (key == "--connections")
      connections = std::stoul(value);
    else if (key == "--ms")
      ms = std::stoul(value);
    else if (key == "--reconnect")
      reconnect = std::stoul(value);
    else if (key == "--churn")
      churn = value;
    else
      side.clear();
  }
  if ((side != "io_context" && side != "io_context_each"
        && side != "loop_group" && side != "loop_group_handoff"
        && side != "loop_group_handoff_native"
        && side != "sharded_acceptor" && side != "group_acceptor_rr"
        && side != "group_acceptor_lc")
      || threads == 0 || connections == 0
      || (churn != "all" && churn != "half"))
  {
    std::cerr << "usage: group_http --side io_context|io_context_each|"
                 "loop_group|loop_group_handoff|loop_group_handoff_native|"
                 "sharded_acceptor|group_acceptor_rr|group_acceptor_lc "
                 "--threads T --connections C [--ms M] [--reconnect R] "
                 "[--churn all|half]\n";
    return 2;
  }

  std::vector<int> listeners;
  const std::size_t count =
    (side == "io_context" || side.starts_with("loop_group_handoff")
      || side.starts_with("group_acceptor")) ? 1 : threads;
  listeners.push_back(listener(0, count > 1));
  for (std::size_t i = 1; i < count; ++i)
    listeners.push_back(listener(port_of(listeners[0]), true));
  const unsigned short port = port_of(listeners[0]);

  int ready[2];
  if (::pipe(ready) != 0)
    return 1;
  const pid_t child = ::fork();
  if (child == 0)
  {
    // The parent sends SIGTERM only after `ready`, when the server's
    // signal_set is waiting for it.
    ::close(ready[0]);
    serve(side, threads, listeners, ready[1]);
    const std::uint64_t n[4] = {answered.load(), accepted.load(),
      live_at_stop[0], live_at_stop[1]};
    (void)!::write(ready[1], n, sizeof(n));
    std::_Exit(0);
  }
  for (int fd : listeners)
    ::close(fd);
  ::close(ready[1]);
  char c;
  if (::read(ready[0], &c, 1) != 1)
    return 1;

  // Two generator threads, each with its own io_context and half the
  // connections.
  std::atomic<bool> running{true};
  std::vector<std::unique_ptr<net::io_context>> ctxs;
  std::vector<std::unique_ptr<client>> clients;
  const tcp::endpoint to(net::ip::address_v4::loopback(), port);
  for (int g = 0; g < 2; ++g)
    ctxs.push_back(std::make_unique<net::io_context>(1));
  for (std::size_t k = 0; k < connections; ++k)
  {
    // Pairs of clients per generator thread, so that with --churn half
    // each thread has as many churning clients as keeping ones.
    auto& ctx = *ctxs[(k / 2) % 2];
    const bool churns = churn == "all" || k % 2 == 1;
    clients.push_back(std::make_unique<client>(ctx, running, to,
          churns ? reconnect : 0));
    clients.back()->socket.connect(to);
    clients.back()->socket.set_option(tcp::no_delay(true));
  }
  for (auto& cl : clients)
    cl->send();
  std::vector<std::thread> generators;
  for (auto& ctx : ctxs)
    generators.emplace_back([&ctx] { ctx->run(); });

  // Warm up, then measure a window.
  const auto warm = std::chrono::milliseconds(ms / 4);
  std::this_thread::sleep_for(warm);
  auto total = [&] {
    std::uint64_t n = 0;
    for (auto& cl : clients)
      n += cl->done.load(std::memory_order_relaxed);
    return n;
  };
  const std::uint64_t before = total();
  const double cpu_before = cpu_seconds(child);
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  const std::uint64_t after = total();
  const double cpu_after = cpu_seconds(child);
  const double seconds = std::chrono::duration<double>(
      std::chrono::steady_clock::now() - start).count();

  running = false;
  for (auto& t : generators)
    t.join();
  ::kill(child, SIGTERM);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::uint64_t reported[4] = {0, 0, 0, 0};
  if (::read(ready[0], reported, sizeof(reported)) != sizeof(reported))
    reported[0] = reported[1] = 0;

  bool bad = false;
  std::size_t idle = 0;
  for (auto& cl : clients)
  {
    bad = bad || cl->bad;
    idle += cl->done.load() == 0;
  }
  const double requests = double(after - before);
  const double cpu = cpu_after - cpu_before;
  std::printf("{\"side\": \"%s\", \"threads\": %zu, \"connections\": %zu, "
      "\"requests_per_s\": %.1f, \"server_cpu_s\": %.3f, "
      "\"requests_per_cpu_s\": %.1f, \"window_s\": %.3f, "
      "\"connections_never_served\": %zu, \"server_exit\": %d, "
      "\"server_pid\": %d, \"server_answered\": %llu, "
      "\"reconnect\": %zu, \"churn\": \"%s\", "
      "\"server_accepted\": %llu, \"live_at_stop\": [%llu, %llu]}\n",
      side.c_str(), threads, connections, requests / seconds, cpu,
      cpu > 0 ? requests / cpu : 0.0, seconds, idle,
      WIFEXITED(status) ? WEXITSTATUS(status) : -1, int(child),
      static_cast<unsigned long long>(reported[0]), reconnect, churn.c_str(),
      static_cast<unsigned long long>(reported[1]),
      static_cast<unsigned long long>(reported[2]),
      static_cast<unsigned long long>(reported[3]));
  return (bad || idle != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    ? 1 : 0;
}
