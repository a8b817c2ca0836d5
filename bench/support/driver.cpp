//
// bench/support/driver.cpp
//

#include "driver.hpp"
#include "process.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string_view>

namespace bench {

std::uint64_t options::number(const std::string& name,
    std::uint64_t fallback) const
{
  const auto it = parameters.find(name);
  return it == parameters.end() ? fallback : it->second;
}

namespace {

std::string quoted(std::string_view s)
{
  std::string out = "\"";
  for (char c : s)
  {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20)
      out += ' ';
    else
      out += c;
  }
  return out + '"';
}

std::string number_text(double v)
{
  if (!std::isfinite(v))
    return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

std::string object_of(const std::vector<std::pair<std::string, double>>& kv)
{
  std::string out = "{";
  for (const auto& [key, value] : kv)
  {
    if (out.size() > 1)
      out += ", ";
    out += quoted(key) + ": " + number_text(value);
  }
  return out + "}";
}

const char* name_of(measure_mode m) noexcept
{
  switch (m)
  {
  case measure_mode::time:
    return "time";
  case measure_mode::allocations:
    return "allocations";
  case measure_mode::callgrind:
    break;
  }
  return "callgrind";
}

void print(const options& o, const result& r, const region& reg)
{
  const char* status = !r.failure.empty() ? "failed"
    : !r.pending.empty() ? "pending" : "ok";
  std::string out = "{\"workload\": " + quoted(o.workload)
    + ", \"side\": " + quoted(name_of(o.side))
    + ", \"mode\": " + quoted(name_of(o.mode))
    + ", \"status\": " + quoted(status);
  if (!r.failure.empty())
    out += ", \"failure\": " + quoted(r.failure);
  if (!r.pending.empty())
    out += ", \"pending\": " + quoted(r.pending);
  if (status == std::string_view("ok"))
  {
    out += ", \"checked\": " + quoted(r.checked)
      + ", \"ops\": " + number_text(double(r.ops))
      + ", \"seconds\": " + number_text(reg.seconds())
      + ", \"metrics\": " + object_of(r.metrics)
      + ", \"details\": " + object_of(r.details);
    if (o.mode == measure_mode::time)
    {
      if (const auto n = reg.instructions())
        out += ", \"instructions_per_op\": " + number_text(double(*n) / double(r.ops));
      else
        out += ", \"instructions_note\": " + quoted(reg.instructions_note());
    }
    if (const auto a = reg.allocations())
    {
      out += ", \"allocations_per_op\": "
        + number_text(double(a->allocations) / double(r.ops))
        + ", \"frees_per_op\": " + number_text(double(a->frees) / double(r.ops));
    }
  }
  out += "}";
  std::printf("%s\n", out.c_str());
  std::fflush(stdout);
}

int usage(const char* program, const std::vector<workload>& workloads,
    const std::string& problem)
{
  std::fprintf(stderr, "%s: %s\nusage: %s <workload> --side "
      "io_context|io_context_1|turnloop [--mode time|allocations|callgrind] "
      "[--config <turnloop config>] [--<parameter> <number>]...\nworkloads:",
      program, problem.c_str(), program);
  for (const workload& w : workloads)
    std::fprintf(stderr, " %s", w.name);
  std::fprintf(stderr, "\n");
  return 2;
}

} // namespace

int run_program(int argc, char** argv, const std::vector<workload>& workloads)
{
  if (argc < 2)
    return usage(argv[0], workloads, "no workload named");

  options o;
  o.workload = argv[1];
  const workload* chosen = nullptr;
  for (const workload& w : workloads)
    if (o.workload == w.name)
      chosen = &w;
  if (!chosen)
    return usage(argv[0], workloads, "unknown workload " + o.workload);

  for (int i = 2; i < argc; i += 2)
  {
    const std::string_view flag = argv[i];
    if (!flag.starts_with("--") || i + 1 >= argc)
      return usage(argv[0], workloads, "expected --<name> <value>");
    const std::string name(flag.substr(2));
    const std::string value = argv[i + 1];
    if (name == "side")
    {
      const auto s = side_named(value);
      if (!s)
        return usage(argv[0], workloads, "unknown side " + value);
      o.side = *s;
    }
    else if (name == "mode")
    {
      if (value == "time")
        o.mode = measure_mode::time;
      else if (value == "allocations")
        o.mode = measure_mode::allocations;
      else if (value == "callgrind")
        o.mode = measure_mode::callgrind;
      else
        return usage(argv[0], workloads, "unknown mode " + value);
    }
    else if (name == "config")
    {
      const auto c = config_named(value);
      if (!c)
        return usage(argv[0], workloads, "unknown config " + value);
      o.config = *c;
    }
    else
    {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0')
        return usage(argv[0], workloads, "not a number: " + value);
      o.parameters[name] = v;
    }
  }

  raise_descriptor_limit();
  region reg(o.mode);
  result r;
  try
  {
    r = chosen->run(o, reg);
  }
  catch (const std::exception& e)
  {
    r = result::failed(std::string("exception: ") + e.what());
  }
  if (r.failure.empty() && r.pending.empty())
  {
    if (!reg.complete())
      r = result::failed("the measured region was not completed");
    else if (r.ops == 0)
      r = result::failed("no operations were measured");
  }
  print(o, r, reg);
  return r.failure.empty() ? 0 : 1;
}

std::vector<workload> joined(std::vector<workload> stock,
    std::vector<workload> loop)
{
  if (stock.size() != loop.size())
    throw std::logic_error("the two units of a benchmark program list "
        "different workloads");
  std::vector<workload> all;
  for (std::size_t i = 0; i != stock.size(); ++i)
  {
    if (std::string_view(stock[i].name) != loop[i].name)
      throw std::logic_error(std::string("the two units of a benchmark "
          "program differ at workload ") + stock[i].name);
    all.push_back({stock[i].name,
        [on_stock = std::move(stock[i].run), on_loop = std::move(loop[i].run)](
            const options& o, region& r) {
          return o.side == side::turnloop ? on_loop(o, r) : on_stock(o, r);
        }});
  }
  return all;
}

} // namespace bench

int main(int argc, char** argv)
{
  try
  {
    return bench::run_program(argc, argv,
        bench::joined(bench::stock_workloads(), bench::turnloop_workloads()));
  }
  catch (const std::exception& e)
  {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
