//
// example/blocking_files.cpp
//
// A small file server whose coroutines read files with ordinary blocking
// reads, on the loop's blocking workers (turnloop::async_blocking), so the
// loop's thread never waits for the disk.
//
// The program writes a few files to a temporary directory, serves them on a
// loopback port ("GET <name>\n" -> "OK <size>\n<bytes>" or "ERR <why>\n"),
// and runs four clients against the server at once, including a request for
// a file that does not exist: its std::ifstream failure reaches the server's
// coroutine as the job's exception. It then shows a long job
// (turnloop::async_blocking_long) that waits for a device which never
// answers, cancelled by a timeout through its turnloop::stop_token. It prints the
// blocking service's statistics and exits 0 if every reply was right.
//

#include <turnloop.hpp>

#include <turnloop/asio.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace net = turnloop::asio; // Boost.Asio, or standalone Asio
namespace fs = std::filesystem;
using net::awaitable;
using net::use_awaitable;
using net::ip::tcp;
using namespace net::experimental::awaitable_operators;
using namespace std::chrono_literals;

// Blocking: runs on a worker thread, never on the loop's.
std::string read_whole_file(const fs::path& path)
{
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot open " + path.filename().string());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string reply_for(std::exception_ptr e, const std::string& contents)
{
  if (!e)
    return "OK " + std::to_string(contents.size()) + "\n" + contents;
  try
  {
    std::rethrow_exception(e);
  }
  catch (const std::exception& x)
  {
    return std::string("ERR ") + x.what() + "\n";
  }
}

awaitable<void> session(tcp::socket socket, fs::path root)
{
  const auto ex = co_await net::this_coro::executor;
  net::streambuf request;
  for (;;)
  {
    auto [ec, n] = co_await net::async_read_until(socket, request, '\n',
        net::as_tuple(use_awaitable));
    if (ec)
      co_return; // the client is done
    std::string line(net::buffers_begin(request.data()),
        net::buffers_begin(request.data()) + n - 1);
    request.consume(n);
    const std::string name = line.rfind("GET ", 0) == 0 ? line.substr(4) : "";

    std::string reply;
    try
    {
      // Named, not a temporary in the co_await: GCC 12 destroys a
      // temporary lambda with non-trivial captures there twice.
      auto read = [path = root / name] { return read_whole_file(path); };
      auto [e, contents] = co_await turnloop::async_blocking(ex,
          std::move(read), use_awaitable);
      reply = reply_for(e, contents);
    }
    catch (const turnloop::system_error& refused)
    {
      // resource_limit: the service is at a ceiling; the read never ran.
      reply = "BUSY " + refused.code().message() + "\n";
    }
    co_await net::async_write(socket, net::buffer(reply), use_awaitable);
  }
}

awaitable<void> listen(tcp::acceptor& acceptor, fs::path root)
{
  for (;;)
  {
    auto [ec, socket] = co_await acceptor.async_accept(
        net::as_tuple(use_awaitable));
    if (ec)
      co_return; // closed: the program is ending
    net::co_spawn(acceptor.get_executor(),
        session(std::move(socket), root), net::detached);
  }
}

// Fetches every file once and checks each reply against what was written.
awaitable<bool> client(tcp::endpoint server,
    const std::map<std::string, std::string>& files)
{
  tcp::socket socket(co_await net::this_coro::executor);
  co_await socket.async_connect(server, use_awaitable);
  bool ok = true;
  net::streambuf in;
  for (const auto& [name, expected] : files)
  {
    const std::string request = "GET " + name + "\n";
    co_await net::async_write(socket, net::buffer(request), use_awaitable);
    const std::size_t n = co_await net::async_read_until(socket, in, '\n',
        use_awaitable);
    std::string header(net::buffers_begin(in.data()),
        net::buffers_begin(in.data()) + n - 1);
    in.consume(n);
    if (header.rfind("OK ", 0) != 0)
    {
      // Only the file that was never written may fail, and it must say why.
      ok = ok && expected.empty() && header == "ERR cannot open " + name;
      continue;
    }
    const std::size_t size = std::stoul(header.substr(3));
    if (in.size() < size)
      co_await net::async_read(socket, in,
          net::transfer_exactly(size - in.size()), use_awaitable);
    std::string body(net::buffers_begin(in.data()),
        net::buffers_begin(in.data()) + size);
    in.consume(size);
    ok = ok && body == expected;
  }
  co_return ok;
}

awaitable<bool> all_clients(tcp::acceptor& acceptor,
    std::map<std::string, std::string> files)
{
  const tcp::endpoint server = acceptor.local_endpoint();
  auto [a, b, c, d] = co_await (client(server, files)
      && client(server, files) && client(server, files)
      && client(server, files));
  acceptor.close(); // ends listen(); the sessions end with their clients
  co_return a && b && c && d;
}

// A long job: waits for a device that never answers, unless asked to stop.
awaitable<bool> give_up_on_a_device()
{
  std::mutex m;
  std::condition_variable_any answered;
  std::atomic<bool> saw_stop{false};
  net::steady_timer timeout(co_await net::this_coro::executor, 20ms);
  // The timeout wins; the job's turnloop::stop_token is signalled, the wait
  // returns, and the operator returns once the job has.
  auto winner = co_await (
      turnloop::async_blocking_long(co_await net::this_coro::executor,
        [&](turnloop::stop_token stop) {
          std::unique_lock lock(m);
#if defined(TURNLOOP_HAS_STD_STOP_TOKEN)
          // A std::stop_token: the wait itself ends when stop is requested.
          answered.wait(lock, stop, [] { return false; });
#else // defined(TURNLOOP_HAS_STD_STOP_TOKEN)
          // turnloop's own token (libc++ 16 has no <stop_token>): no
          // stop_callback, so the job looks at it now and then.
          while (!stop.stop_requested())
            answered.wait_for(lock, std::chrono::milliseconds(1));
#endif // defined(TURNLOOP_HAS_STD_STOP_TOKEN)
          saw_stop = stop.stop_requested();
        },
        use_awaitable)
      || timeout.async_wait(use_awaitable));
  co_return winner.index() == 1 && saw_stop;
}

int main()
{
  const fs::path root = fs::temp_directory_path()
    / ("turnloop-blocking-files-" + std::to_string(::getpid()));
  fs::create_directories(root);
  std::map<std::string, std::string> files = {
    {"hello.txt", "hello, turns\n"},
    {"numbers.csv", "1,2,3\n4,5,6\n"},
    {"big.bin", std::string(200'000, 'x')},
    {"missing.txt", ""}, // never written: its read throws
  };
  for (const auto& [name, contents] : files)
    if (!contents.empty())
      std::ofstream(root / name, std::ios::binary) << contents;

  turnloop::loop loop;
  tcp::acceptor acceptor(loop, {net::ip::address_v4::loopback(), 0});
  net::co_spawn(loop, listen(acceptor, root), net::detached);

  bool served = false;
  bool gave_up = false;
  net::co_spawn(loop, all_clients(acceptor, files),
      [&](std::exception_ptr e, bool ok) { served = !e && ok; });
  net::co_spawn(loop, give_up_on_a_device(),
      [&](std::exception_ptr e, bool ok) { gave_up = !e && ok; });
  loop.run();
  fs::remove_all(root);

  const turnloop::blocking_stats s = turnloop::blocking_statistics(loop);
  std::cout << "files served to 4 clients: " << (served ? "ok" : "WRONG")
    << "\nlong job stopped by its timeout: " << (gave_up ? "ok" : "WRONG")
    << "\nblocking jobs: " << s.admitted << " admitted, " << s.delivered
    << " delivered, " << s.refused << " refused; at most " << s.undelivered_high_water
    << " undelivered, " << s.queued_high_water << " queued; " << s.threads
    << " workers, " << s.long_threads_high_water << " long thread(s)\n";
  return served && gave_up ? 0 : 1;
}
