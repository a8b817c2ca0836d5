#!/usr/bin/env python3
"""Runs turnloop's side-by-side benchmarks and reports them.

Every workload runs the same templated code on three sides: io_context
(default constructor), io_context(1) and turnloop::loop. Each measurement is
a fresh child process (stage/bench/<program>). Sides are interleaved,
A B C A B C ..., so that drift of a shared machine falls on all of them; the
first round is a warm-up and is discarded. Reported: the median of each
side, turnloop's ratio to both io_context sides, and the coefficient of
variation as the noise estimate. Raw values go to bench/results/*.json, the
ratios to an SVG chart. bench/run.sh builds the programs first.

  run.py [--quick | --full] [--only <names>]   timed, memory and allocation rows
  run.py --callgrind <names>                   instructions per op, under callgrind
  run.py --group [--runs N] [--only W]         the loop_group HTTP comparisons
                                               (bench/group_http.py)

<names> is a comma-separated list of workload names or families (post, timer,
tcp, blocking, memory).
"""

import argparse
import dataclasses
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field

import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "stage", "bench")  # see build_suffix()
ASIO = None  # --asio: the other Asio the programs were built against
COMPILER = None  # --compiler: clang or clang-libc++ (None: g++)
REACTOR = None  # --reactor: select or asio-io-uring (None: epoll)
WINDOWS = False  # --windows: MinGW-w64 programs, run under Wine
WINE = [os.path.join(ROOT, "test", "wine.sh")]
# Under Wine every PostQueuedCompletionStatus and socket call goes through
# wineserver (io_context's chained post measured about 10k posts/s here):
# the Windows runs are these workloads, at these sizes. --only picks among
# them.
WINDOWS_SIZES = {
    "post_chain": {"quick": {"ops": 10_000}, "full": {"ops": 100_000}},
    "post_cross_thread_4": {"quick": {"ops": 5_000}, "full": {"ops": 50_000}},
    "timer_chain": {"quick": {"ops": 1_000}, "full": {"ops": 10_000}},
    "tcp_ping_pong": {"quick": {"round_trips": 1_000},
                      "full": {"round_trips": 10_000}},
    "tcp_http": {"quick": {"requests": 20}, "full": {"requests": 200}},
}


def build_suffix():
    """What b2's stage-location (Jamroot) appends for --asio, --compiler and
    --reactor."""
    suffix = f"-asio-{ASIO}" if ASIO else ""
    if COMPILER:
        suffix += "-clang" + ("-libc++" if COMPILER == "clang-libc++" else "")
    if REACTOR:
        suffix += f"-{REACTOR}"
    if WINDOWS:
        suffix += "-windows"
    return suffix


def b2_properties():
    """The b2 properties of --asio, --compiler and --reactor."""
    props = [f"asio={ASIO}"] if ASIO else []
    if COMPILER:
        props.append("toolset=clang-16")
        if COMPILER == "clang-libc++":
            props.append("stdlib=libc++")
    if REACTOR:
        props.append(f"reactor={REACTOR}")
    if WINDOWS:
        props.append("target-os=windows")
    return props
RESULTS = os.path.join(ROOT, "bench", "results")
CHILD_TIMEOUT_S = 600


@dataclass
class Metric:
    key: str            # name in the child's "metrics"
    label: str          # row name in the table
    unit: str
    scale: float        # table value = metric * scale
    better: str         # "higher" or "lower"
    digits: int = 2


@dataclass
class Workload:
    name: str
    family: str
    program: str
    subcommand: str
    sizes: dict         # mode ("quick", "full", "callgrind") -> parameters
    metrics: list
    description: str
    count_allocations: bool = False
    args: dict = field(default_factory=dict)  # fixed parameters


def per_s(key, label, unit, scale):
    return Metric(key, label, unit, scale, "higher")


def pooled_rows(name, subcommand, sizes, metrics, description, args,
                epoll_name=None):
    """A pooled workload twice: turnloop's pooled reads through io_uring
    (named @p name) and on the epoll path (@p epoll_name, by default
    name_epoll); @p metrics makes a row's metrics from its name."""
    epoll_name = epoll_name or name + "_epoll"
    return [Workload(name, "tcp", "tcp", subcommand, sizes, metrics(name),
                     description + ", through io_uring",
                     count_allocations=True,
                     args={**args, "config": "pooled_io_uring"}),
            Workload(epoll_name, "tcp", "tcp", subcommand, sizes,
                     metrics(epoll_name),
                     description + ", on the epoll path "
                     "(config::pooled_io = epoll)",
                     count_allocations=True,
                     args={**args, "config": "pooled_epoll"})]


def typed(w):
    """@p w again with its I/O objects typed on the context's own executor
    (turnloop/io_objects.hpp): the *_typed subcommand, named name_typed."""
    return Workload(w.name + "_typed", w.family, w.program,
                    w.subcommand + "_typed", w.sizes,
                    [Metric(m.key, m.label.replace(w.name, w.name + "_typed", 1),
                            m.unit, m.scale, m.better, m.digits)
                     for m in w.metrics],
                    w.description + ", with the timer or sockets typed on "
                    "the context's executor (turnloop::steady_timer, "
                    "turnloop::ip::tcp::socket; io_context's own on its sides)",
                    w.count_allocations, dict(w.args))


def memory_pooled_rows():
    """memory_idle_connections with pooled reads on turnloop's side, once per
    config: net, then net_io_uring (through io_uring); the io_context sides
    run the stock server."""
    rows = []
    for suffix, label, config, description in (
            ("", "memory_idle_connections pooled", "net",
             "the same with pooled reads, no buffer per connection "
             "(turnloop, config net, whose max_operations admits every "
             "pending read; the io_context sides: the stock server, a 16 KiB "
             "buffer per connection)"),
            ("_io_uring", "memory_idle_connections pooled io_uring",
             "net_io_uring",
             "the same with pooled reads through io_uring (config "
             "net_io_uring)")):
        rows.append(Workload(
            "memory_idle_connections_pooled" + suffix, "memory", "memory",
            "idle_connections_pooled",
            {"quick": {"connections": 1_000}, "full": {"connections": 8_000}},
            [Metric("resident_bytes_per_connection", label + " resident",
                    "bytes/connection", 1, "lower", 0),
             Metric("heap_bytes_per_connection", label + " heap",
                    "bytes/connection", 1, "lower", 0)],
            description, args={"config": config, "buffer": 16384}))
    return rows


WORKLOADS = [
    Workload("post_chain", "post", "post", "chain",
             {"quick": {"ops": 1_000_000}, "full": {"ops": 10_000_000},
              "callgrind": {"ops": 100_000}},
             [per_s("posts_per_s", "post_chain", "M posts/s", 1e-6)],
             "chained local posts, each handler posts the next",
             count_allocations=True),
    Workload("post_chain_reactor", "post", "post", "chain_reactor",
             {"quick": {"ops": 500_000}, "full": {"ops": 5_000_000},
              "callgrind": {"ops": 100_000}},
             [per_s("posts_per_s", "post_chain_reactor", "M posts/s", 1e-6)],
             "the same with a reactor in the context (a steady_timer exists)",
             count_allocations=True),
    Workload("post_cross_thread_1", "post", "post", "cross_thread",
             {"quick": {"ops": 200_000}, "full": {"ops": 2_000_000},
              "callgrind": {"ops": 50_000}},
             [per_s("posts_per_s", "post_cross_thread_1", "M posts/s", 1e-6)],
             "posts from 1 producer thread, end to end",
             count_allocations=True, args={"producers": 1}),
    Workload("post_cross_thread_4", "post", "post", "cross_thread",
             {"quick": {"ops": 50_000}, "full": {"ops": 500_000},
              "callgrind": {"ops": 12_500}},
             [per_s("posts_per_s", "post_cross_thread_4", "M posts/s", 1e-6)],
             "posts from 4 producer threads (N each), end to end",
             args={"producers": 4}),
    Workload("post_coroutine", "post", "post", "coroutine",
             {"quick": {"ops": 500_000}, "full": {"ops": 5_000_000},
              "callgrind": {"ops": 50_000}},
             [Metric("ns_per_round_trip", "post_coroutine", "ns/round trip", 1,
                     "lower", 1)],
             "co_await post(ex, use_awaitable) in a coroutine",
             count_allocations=True),
    Workload("timer_chain", "timer", "timers", "chain",
             {"quick": {"ops": 5_000}, "full": {"ops": 50_000},
              "callgrind": {"ops": 5_000}},
             [per_s("waits_per_s", "timer_chain", "k waits/s", 1e-3)],
             "one steady_timer re-armed with expires_after(0) from its handler",
             count_allocations=True),
    Workload("timer_arm_cancel", "timer", "timers", "arm_cancel",
             {"quick": {"rounds": 500}, "full": {"rounds": 5_000},
              "callgrind": {"rounds": 50}},
             [per_s("arm_cancels_per_s", "timer_arm_cancel", "M ops/s", 1e-6)],
             "1000 timers armed an hour ahead and cancelled, round after round",
             count_allocations=True, args={"timers": 1000}),
    Workload("timer_million", "timer", "timers", "million",
             {"quick": {"timers": 100_000}, "full": {"timers": 1_000_000},
              "callgrind": {"timers": 20_000}},
             [Metric("insert_ns_per_timer", "timer_million insert",
                     "ns/timer", 1, "lower", 1),
              Metric("dispatch_ns_per_timer", "timer_million dispatch",
                     "ns/timer", 1, "lower", 1),
              Metric("cleanup_ns_per_timer", "timer_million cleanup",
                     "ns/timer", 1, "lower", 1)],
             "timers with distinct, scrambled deadlines: insert, dispatch, "
             "cleanup"),
    Workload("tcp_ping_pong", "tcp", "tcp", "ping_pong",
             {"quick": {"round_trips": 10_000}, "full": {"round_trips": 100_000},
              "callgrind": {"round_trips": 5_000}},
             [Metric("round_trip_median_us", "tcp_ping_pong median", "µs/round trip",
                     1, "lower"),
              Metric("round_trip_p99_us", "tcp_ping_pong p99", "µs/round trip",
                     1, "lower")],
             "64-byte ping-pong, 1 connection, client and server on one context",
             count_allocations=True),
    Workload("tcp_ping_pong_threads", "tcp", "tcp", "ping_pong_threads",
             {"quick": {"round_trips": 2_000}, "full": {"round_trips": 30_000},
              "callgrind": {"round_trips": 2_000}},
             [Metric("round_trip_median_us", "tcp_ping_pong_threads median",
                     "µs/round trip", 1, "lower"),
              Metric("round_trip_p99_us", "tcp_ping_pong_threads p99",
                     "µs/round trip", 1, "lower")],
             "the same, client on a second thread with its own context"),
    *pooled_rows("tcp_ping_pong_pooled", "ping_pong_pooled",
                 {"quick": {"round_trips": 10_000},
                  "full": {"round_trips": 100_000},
                  "callgrind": {"round_trips": 5_000}},
                 lambda n: [Metric("round_trip_median_us", n + " median",
                                   "µs/round trip", 1, "lower"),
                            Metric("round_trip_p99_us", n + " p99",
                                   "µs/round trip", 1, "lower")],
                 "tcp_ping_pong with the turnloop server on pooled reads "
                 "and lease writes (io_context sides: the stock server)",
                 {}),
    Workload("tcp_echo", "tcp", "tcp", "echo",
             {"quick": {"messages": 100}, "full": {"messages": 1_000},
              "callgrind": {"messages": 50}},
             [per_s("messages_per_s", "tcp_echo", "k msgs/s", 1e-3)],
             "64 connections, 1 KiB messages echoed, clients on a second thread",
             count_allocations=True, args={"connections": 64, "bytes": 1024}),
    *pooled_rows("tcp_echo_pooled", "echo_pooled",
                 {"quick": {"messages": 100}, "full": {"messages": 1_000},
                  "callgrind": {"messages": 50}},
                 lambda n: [per_s("messages_per_s", n, "k msgs/s", 1e-3)],
                 "tcp_echo with the turnloop server on pooled reads and lease "
                 "writes (io_context sides: the stock server, a buffer per "
                 "connection)",
                 {"connections": 64, "bytes": 1024}),
    *pooled_rows("tcp_echo_pooled_256", "echo_pooled",
                 {"quick": {"messages": 50}, "full": {"messages": 500},
                  "callgrind": {"messages": 20}},
                 lambda n: [per_s("messages_per_s", n, "k msgs/s", 1e-3)],
                 "tcp_echo_pooled with 256 connections",
                 {"connections": 256, "bytes": 1024},
                 epoll_name="tcp_echo_pooled_epoll_256"),
    Workload("tcp_accept_churn", "tcp", "tcp", "accept_churn",
             {"quick": {"connections": 2_000}, "full": {"connections": 20_000},
              "callgrind": {"connections": 1_000}},
             [per_s("accepts_per_s", "tcp_accept_churn", "k accepts/s", 1e-3)],
             "connect, write, read, close; 32 clients at a time",
             count_allocations=True, args={"concurrency": 32}),
    Workload("tcp_http", "tcp", "tcp", "http",
             {"quick": {"requests": 100}, "full": {"requests": 1_000},
              "callgrind": {"requests": 50}},
             [per_s("requests_per_s", "tcp_http", "k requests/s", 1e-3)],
             "HTTP/1.1 keep-alive request/response, 64 connections",
             count_allocations=True, args={"connections": 64}),
    *pooled_rows("tcp_http_pooled", "http_pooled",
                 {"quick": {"requests": 100}, "full": {"requests": 1_000},
                  "callgrind": {"requests": 50}},
                 lambda n: [per_s("requests_per_s", n, "k requests/s", 1e-3)],
                 "tcp_http with the turnloop server on pooled reads "
                 "(io_context sides: the stock server)",
                 {"connections": 64}),
    Workload("blocking_no_op_1", "blocking", "blocking", "no_op",
             {"quick": {"jobs": 5_000}, "full": {"jobs": 50_000},
              "callgrind": {"jobs": 2_000}},
             [per_s("jobs_per_s", "blocking_no_op_1", "k jobs/s", 1e-3),
              Metric("us_per_job", "blocking_no_op_1 round trip", "µs/job", 1,
                     "lower", 3)],
             "no-op job round trip (thread pool / blocking service), 1 in flight",
             args={"concurrency": 1}),
    Workload("blocking_no_op_32", "blocking", "blocking", "no_op",
             {"quick": {"jobs": 20_000}, "full": {"jobs": 200_000},
              "callgrind": {"jobs": 5_000}},
             [per_s("jobs_per_s", "blocking_no_op_32", "k jobs/s", 1e-3),
              Metric("us_per_job", "blocking_no_op_32 round trip", "µs/job", 1,
                     "lower", 3)],
             "the same, 32 in flight", args={"concurrency": 32}),
    Workload("blocking_stat_32", "blocking", "blocking", "stat",
             {"quick": {"jobs": 10_000}, "full": {"jobs": 100_000},
              "callgrind": {"jobs": 5_000}},
             [per_s("jobs_per_s", "blocking_stat_32", "k jobs/s", 1e-3),
              Metric("us_per_job", "blocking_stat_32 round trip", "µs/job", 1,
                     "lower", 3)],
             "stat(\".\") as the job, 32 in flight", args={"concurrency": 32}),
] + [
    # The blocking rows again on a busy machine: a spinning thread per
    # hardware thread in the benchmark's process, on both sides. No
    # callgrind size: the hog's own instructions would be counted.
    Workload(f"{name}_busy", "blocking", "blocking", subcommand,
             {"quick": {"jobs": jobs // 4}, "full": {"jobs": jobs}},
             [per_s("jobs_per_s", f"{name}_busy", "k jobs/s", 1e-3),
              Metric("us_per_job", f"{name}_busy round trip", "µs/job", 1,
                     "lower", 3)],
             f"{name} beside a CPU hog on every core",
             args={"concurrency": concurrency, "hog": 1})
    for name, subcommand, concurrency, jobs in (
        ("blocking_no_op_1", "no_op", 1, 20_000),
        ("blocking_no_op_32", "no_op", 32, 80_000),
        ("blocking_stat_32", "stat", 32, 40_000))
] + [
    Workload("memory_idle_connections", "memory", "memory", "idle_connections",
             {"quick": {"connections": 1_000}, "full": {"connections": 8_000}},
             [Metric("resident_bytes_per_connection",
                     "memory_idle_connections resident", "bytes/connection", 1,
                     "lower", 0),
              Metric("heap_bytes_per_connection", "memory_idle_connections heap",
                     "bytes/connection", 1, "lower", 0)],
             "server RSS slope over N idle connections, 16 KiB buffer each, "
             "clients in another process",
             args={"buffer": 16384}),
    *memory_pooled_rows(),
]

# The rows that have a *_typed twin (typed()), which follows each of them.
TYPED_ROWS = ("timer_chain", "timer_arm_cancel", "timer_million",
              "tcp_ping_pong", "tcp_echo", "tcp_http")
WORKLOADS = [v for w in WORKLOADS
             for v in ([w, typed(w)] if w.name in TYPED_ROWS else [w])]

# The idle-context rows: (context column, config column, side, arguments).
# turnloop builds its reactor in its constructor, io_context with the first
# I/O object: the "+ steady_timer" row includes it for comparison.
IDLE_ROWS = [
    ("io_context", "—", "io_context", []),
    ("io_context(1)", "—", "io_context_1", []),
    ("io_context(1)", "+ steady_timer (reactor)", "io_context_1", ["--reactor", "1"]),
] + [("turnloop", config, "turnloop", ["--config", config]) for config in (
    "default", "net", "net_max_handles_1", "net_max_operations_1",
    "net_pooled_buffers_0", "net_post_capacity_1", "net_all_minimised",
    "default_pooled_buffers_0")]

MODES = {"quick": {"runs": 3, "allocation_runs": 1},
         "full": {"runs": 7, "allocation_runs": 3}}


def progress(text):
    print(text, file=sys.stderr, flush=True)


def child_command(w, side, params, mode, config=None):
    program = os.path.join(PROGRAMS, w.program + (".exe" if WINDOWS else ""))
    cmd = WINE + [program] if WINDOWS else [program]
    cmd += [w.subcommand, "--side", side, "--mode", mode]
    if config:
        cmd += ["--config", config]
    for k, v in {**w.args, **params}.items():
        cmd += [f"--{k}", str(v)]
    return cmd


def run_child(cmd, prefix=()):
    """Runs one measurement; returns its JSON object (with "failure" set if
    the child failed or printed nothing usable)."""
    try:
        proc = subprocess.run(list(prefix) + cmd, capture_output=True,
                              text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "failure": f"timed out after {CHILD_TIMEOUT_S} s"}
    except OSError as e:
        return {"status": "failed", "failure": f"cannot run {cmd[0]}: {e}"}
    # Wine's console output ends its lines with \r\n.
    proc.stdout = proc.stdout.replace("\r", "")
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        result = {"status": "failed",
                  "failure": f"exit {proc.returncode}, no result: "
                             + proc.stderr.strip()[-300:]}
    if proc.returncode != 0 and result.get("status") == "ok":
        result = {"status": "failed", "failure": f"exit {proc.returncode}"}
    result["command"] = " ".join(cmd)
    return result


def brief(result, metric):
    if result.get("status") == "pending":
        return "pending: " + result["pending"]
    if result.get("status") != "ok":
        return "FAILED: " + result.get("failure", "?")
    value = result["metrics"][metric.key] * metric.scale
    return f"{value:.{metric.digits}f} {metric.unit}"


def side_entries(results_by_side, value_of, sides):
    """Per side: the values value_of(result) of its runs, or why there are
    none."""
    entries = {}
    for side in sides:
        results = results_by_side[side]
        failed = [r for r in results if r.get("status") == "failed"]
        pending = [r for r in results if r.get("status") == "pending"]
        if failed:
            entries[side] = {"failure": failed[0].get("failure", "?")}
        elif pending:
            entries[side] = {"pending": pending[0]["pending"]}
        else:
            values = [value_of(r) for r in results]
            entries[side] = {"values": values, "summary": report.summarise(values)}
            instr = [r["instructions_per_op"] for r in results
                     if "instructions_per_op" in r]
            if instr:
                entries[side]["instructions_per_op"] = report.summarise(instr)
    return entries


def run_workload(w, mode, rounds, raw):
    """Warm-up round plus `rounds` measured rounds, sides interleaved."""
    sides = report.SIDES
    measured = {s: [] for s in sides}
    stopped = set()  # sides that are pending or failed are not run again
    for i in range(rounds + 1):
        for side in sides:
            if side in stopped:
                continue
            result = run_child(child_command(w, side, w.sizes[mode], "time"))
            raw.append({"workload": w.name, "round": i, "warmup": i == 0, **result})
            tag = "warm-up" if i == 0 else f"run {i}/{rounds}"
            progress(f"  {w.name:<32} {side:<13} {tag:<9} "
                     + brief(result, w.metrics[0]))
            if result.get("status") != "ok":
                stopped.add(side)
            if i > 0 or side in stopped:
                measured[side].append(result)
    rows = []
    for m in w.metrics:
        row = {"name": m.label, "workload": w.name, "unit": m.unit,
               "better": m.better, "digits": m.digits,
               "description": w.description,
               "sides": side_entries(
                   measured, lambda r, m=m: r["metrics"][m.key] * m.scale, sides)}
        row["ratio_io_context"] = report.ratio(row, "io_context")
        row["ratio_io_context_1"] = report.ratio(row, "io_context_1")
        rows.append(row)
    return rows


def run_allocations(w, mode, rounds, raw):
    measured = {s: [] for s in report.SIDES}
    for i in range(rounds):
        for side in report.SIDES:
            result = run_child(child_command(w, side, w.sizes[mode], "allocations"))
            raw.append({"workload": w.name, "round": i, **result})
            shown = (f"{result['allocations_per_op']:.4f} allocations/op"
                     if result.get("status") == "ok" else brief(result, w.metrics[0]))
            progress(f"  {w.name:<32} {side:<13} allocs    {shown}")
            measured[side].append(result)
    return {"name": w.name, "sides": side_entries(
        measured, lambda r: r["allocations_per_op"], report.SIDES)}


def run_idle_memory(rounds, raw):
    program = os.path.join(PROGRAMS, "memory")
    measured = {i: [] for i in range(len(IDLE_ROWS))}
    for r in range(rounds + 1):
        for i, (_, config, side, extra) in enumerate(IDLE_ROWS):
            result = run_child([program, "idle", "--side", side] + extra)
            raw.append({"workload": "memory_idle", "config": config, "round": r,
                        "warmup": r == 0, **result})
            if r > 0 or result.get("status") != "ok":
                measured[i].append(result)
        progress(f"  memory_idle {'warm-up' if r == 0 else f'run {r}/{rounds}'}: "
                 f"{len(IDLE_ROWS)} contexts measured")
    rows = []
    for i, (context, config, side, _) in enumerate(IDLE_ROWS):
        results = measured[i]
        failed = [x for x in results if x.get("status") != "ok"]
        row = {"context": context, "config": config, "side": side, "metrics": {}}
        if failed:
            row["failure"] = failed[0].get("failure", "?")
        else:
            for key in ("resident_kib", "anonymous_kib", "heap_kib"):
                values = [x["metrics"][key] for x in results]
                row["metrics"][key] = {"values": values, **report.summarise(values)}
        rows.append(row)
    return rows


def selected(names, w_name, family):
    if not names:
        return True
    return any(n == w_name or n == family for n in names)


def command_output(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                              timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def wine_version():
    return command_output([os.environ.get("TURNLOOP_WINE", "/usr/lib/wine/wine64"),
                           "--version"]).strip() or "Wine"


def machine_header(mode_text):
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    boost = "unknown"
    with open("/usr/include/boost/version.hpp") as f:
        found = re.search(r'#define BOOST_LIB_VERSION "(\d+)_(\d+)', f.read())
        if found:
            boost = f"{found.group(1)}.{found.group(2)}"
    asio_include = (os.path.join(ROOT, "bin", f"asio-{ASIO}", "include")
                    if ASIO else "/usr/include")
    standalone = bool(ASIO and ASIO.startswith("standalone-"))
    version_header = (os.path.join(asio_include, "asio", "version.hpp") if standalone
                      else os.path.join(asio_include, "boost", "asio", "version.hpp"))
    with open(version_header) as f:
        found = re.search(r"#define (?:BOOST_)?ASIO_VERSION (\d+)", f.read())
    asio = "unknown"
    if found:
        v = int(found.group(1))
        asio = f"{v // 100000}.{v // 100 % 1000}.{v % 100}"
    if standalone:
        boost = f"none: standalone Asio {asio} (bin/asio-{ASIO})"
    elif ASIO:
        boost += f", with Boost.Asio {asio} in front (asio={ASIO}, bin/asio-{ASIO})"
    else:
        boost += f" (Asio {asio})"
    cxx = ("x86_64-w64-mingw32-g++-posix" if WINDOWS
           else "clang++-16" if COMPILER else "g++")
    compiler = command_output([cxx, "--version"]).splitlines()[:1]
    if COMPILER == "clang-libc++":
        compiler = [compiler[0] + ", libc++"] if compiler else []
    # The exact compile line b2 uses for the benchmarks (a dry run).
    flags = "unknown"
    b2 = ["b2", "-n", "-a", "bench//post"] + b2_properties()
    for line in command_output(b2).splitlines():
        if f'"{cxx}"' in line and "bench/post.cpp" in line:
            flags = re.sub(r'\s-o\s+"[^"]*"|\s-c(?=\s)|\s"bench/post.cpp"', "",
                           line.replace(f'"{cxx}"', cxx)).strip()
            flags = re.sub(r"\s+", " ", flags)
    commit = command_output(["git", "rev-parse", "--short", "HEAD"]).strip()
    if command_output(["git", "status", "--porcelain", "--", "include", "src",
                       "bench"]).strip():
        commit += " (with uncommitted changes)"
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}"
                   + (f", Windows programs under {wine_version()}: Wine's figures "
                      "are not Windows figures (Wine runs completion ports and "
                      "sockets through wineserver)" if WINDOWS else ""),
        "compiler": compiler[0] if compiler else "unknown",
        "boost": boost,
        "build": flags,
        "commit": commit,
        "mode": mode_text,
        "command": "bench/run.sh " + " ".join(sys.argv[1:]),
    }


def instructions_line(raw):
    notes = {r.get("instructions_note") for r in raw if r.get("instructions_note")}
    if any("instructions_per_op" in r for r in raw):
        return "instructions/op: measured (perf instructions:u), in the JSON"
    if notes:
        return "instructions/op: unavailable (perf counters not supported); " \
               "bench/run.sh --callgrind <workload> counts them instead"
    return "instructions/op: not measured"


def print_header(header):
    print(f"# turnloop benchmarks, {header['mode']}")
    for key in ("date", "machine", "compiler", "boost", "build", "commit",
                "command"):
        print(f"{key + ':':<10} {header[key]}")


def main_timed(args):
    mode = "quick" if args.quick else "full"
    runs = args.runs or MODES[mode]["runs"]
    allocation_runs = MODES[mode]["allocation_runs"]
    names = [n for n in (args.only or "").split(",") if n]
    known = {w.name for w in WORKLOADS} | {w.family for w in WORKLOADS} | {"memory_idle"}
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"unknown workload(s): {', '.join(unknown)}; known: "
                 + ", ".join(sorted(known)))

    header = machine_header(f"{mode} mode: 1 warm-up + {runs} measured runs "
                            "per side, interleaved")
    started = time.monotonic()
    raw, rows, allocation_rows = [], [], []
    for w in WORKLOADS:
        if not selected(names, w.name, w.family):
            continue
        if WINDOWS:
            if w.name not in WINDOWS_SIZES:
                continue
            w = dataclasses.replace(w, sizes=WINDOWS_SIZES[w.name])
        progress(f"{w.name}: {w.description}")
        rows += run_workload(w, mode, runs, raw)
        if w.count_allocations and not WINDOWS:
            allocation_rows.append(run_allocations(w, mode, allocation_runs, raw))
    if WINDOWS:
        progress("--windows: " + ", ".join(WINDOWS_SIZES) + ", timed only, "
                 "smaller than on Linux; allocation counts, memory and "
                 "blocking need Linux")
    idle_rows = []
    if selected(names, "memory_idle", "memory") and not WINDOWS:
        progress("memory_idle: one context per process, constructed and run once")
        idle_rows = run_idle_memory(runs, raw)
    elapsed = time.monotonic() - started

    os.makedirs(RESULTS, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.path.join(RESULTS, f"{stamp}-{mode}" + build_suffix())
    timing_rows = [r for r in rows if not r["workload"].startswith("memory")]
    memory_rows = [r for r in rows if r["workload"].startswith("memory")]
    instr = instructions_line(raw)
    chart = report.write_svg(base + ".svg", timing_rows + memory_rows
                             + report.idle_chart_rows(idle_rows),
                             f"{header['date']}, {header['machine']}, {mode} mode")
    report.write_json(base + ".json", {
        "header": header, "instructions": instr, "elapsed_s": elapsed,
        "rows": rows, "allocations": allocation_rows, "idle_memory": idle_rows,
        "raw": raw})

    print_header(header)
    print(instr)
    print(f"ratios: turnloop median / io_context median; cv: coefficient of "
          f"variation over the measured runs")
    if timing_rows:
        print()
        print(report.timing_table(timing_rows))
    if memory_rows or idle_rows:
        print()
        print("## Memory")
    if idle_rows:
        print()
        print("Idle context: growth across constructing one context and running "
              "one empty turn, one context per process, the program's code "
              "prefaulted first (median).")
        print()
        print(report.memory_table(idle_rows))
    if memory_rows:
        print()
        print(report.timing_table(memory_rows))
    if allocation_rows:
        print()
        print(f"## Heap allocations per operation, steady state "
              f"(median of {allocation_runs})")
        print()
        print(report.allocation_table(allocation_rows))
    failures = {(r.get("workload", r["name"]), s, e["failure"])
                for r in rows + allocation_rows
                for s, e in r["sides"].items() if e.get("failure")}
    failures |= {(f"memory_idle {r['context']} {r['config']}", r["side"],
                  r["failure"]) for r in idle_rows if r.get("failure")}
    print()
    for name, side, why in sorted(failures):
        print(f"FAILED {name} on {side}: {why}")
    print(f"results: {base}.json" + (f", chart: {base}.svg" if chart else ""))
    print(f"elapsed: {elapsed:.1f} s")
    return 1 if failures else 0


def callgrind_total(path):
    """Total Ir of a callgrind output file. Its "totals:" line is the sum
    over the instrumented region; "summary:" is written before
    instrumentation starts and stays 0 with --instr-atstart=no."""
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    return None


def main_callgrind(args):
    names = [n for n in args.callgrind.split(",") if n]
    chosen = [w for w in WORKLOADS
              if selected(names, w.name, w.family) and "callgrind" in w.sizes]
    if not chosen:
        sys.exit("no workload with a callgrind size matches " + args.callgrind)
    out_dir = os.path.join(RESULTS, "callgrind")
    os.makedirs(out_dir, exist_ok=True)
    header = machine_header("callgrind: Ir (instructions) per op in the "
                            "measured region, one run per side")
    rows, raw = [], []
    for w in chosen:
        measured = {s: [] for s in report.SIDES}
        for side in report.SIDES:
            out = os.path.join(out_dir, f"{w.name}.{side}.out")
            prefix = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                      f"--callgrind-out-file={out}"]
            result = run_child(child_command(w, side, w.sizes["callgrind"],
                                             "callgrind"), prefix)
            if result.get("status") == "ok":
                total = callgrind_total(out)
                if total is None:
                    result = {"status": "failed", "failure": "no callgrind totals"}
                else:
                    result["ir_per_op"] = total / result["ops"]
            raw.append({"workload": w.name, **result})
            shown = (f"{result['ir_per_op']:.1f} Ir/op"
                     if result.get("status") == "ok"
                     else result.get("pending") or result.get("failure"))
            progress(f"  {w.name:<32} {side:<13} {shown}")
            measured[side].append(result)
        row = {"name": w.name, "sides": side_entries(
            measured, lambda r: r["ir_per_op"], report.SIDES)}
        row["ratio_io_context"] = report.ratio(row, "io_context")
        row["ratio_io_context_1"] = report.ratio(row, "io_context_1")
        rows.append(row)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(RESULTS, f"{stamp}-callgrind"
                        + build_suffix() + ".json")
    report.write_json(path, {"header": header, "rows": rows, "raw": raw})
    print_header(header)
    print()
    print(report.callgrind_table(rows))
    print()
    print(f"results: {path}")
    return 1 if any(e.get("failure") for r in rows for e in r["sides"].values()) else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true",
                       help="short runs, 3 per side (CI smoke test)")
    group.add_argument("--full", action="store_true",
                       help="full-size runs, 7 per side (the default)")
    group.add_argument("--callgrind", metavar="NAMES",
                       help="count instructions per op under callgrind")
    group.add_argument("--group", action="store_true",
                       help="the loop_group HTTP/1.1 comparisons, servers of "
                            "1 and 2 threads: keep-alive, accept churn and "
                            "group_acceptor placement (bench/group_http.py; "
                            "5 runs; --only picks among keepalive, churn, "
                            "placement)")
    parser.add_argument("--only", metavar="NAMES",
                        help="comma-separated workloads or families")
    parser.add_argument("--runs", type=int, help="measured runs per side")
    parser.add_argument("--asio", metavar="VERSION",
                        help="programs built against another Asio: a newer "
                             "Boost.Asio (1.83, 1.87, 1.89, 1.90, 1.38.2) or "
                             "standalone Asio (standalone-1.26.0 ... "
                             "standalone-1.38.2); bench/run.sh builds them")
    parser.add_argument("--compiler", choices=("clang", "clang-libc++"),
                        help="programs built with clang-16 (and libc++); "
                             "bench/run.sh builds them")
    parser.add_argument("--reactor", choices=("select", "asio-io-uring"),
                        help="programs built on Asio's select reactor "
                             "(BOOST_ASIO_DISABLE_EPOLL) or its io_uring "
                             "backend, every side alike; bench/run.sh "
                             "builds them")
    parser.add_argument("--windows", action="store_true",
                        help="programs cross-built with MinGW-w64 (Asio's "
                             "IOCP context) and run under Wine, every side "
                             "alike: the posts, timers and TCP, timed only; "
                             "bench/run.sh builds them")
    args = parser.parse_args()
    global PROGRAMS, ASIO, COMPILER, REACTOR, WINDOWS
    ASIO = args.asio
    COMPILER = args.compiler
    REACTOR = args.reactor
    WINDOWS = args.windows
    if WINDOWS and (ASIO or COMPILER or REACTOR or args.callgrind or args.group):
        parser.error("--windows builds with MinGW-w64 on Debian's Boost: not "
                     "with --asio, --compiler, --reactor, --callgrind or --group")
    PROGRAMS = os.path.join(ROOT, "stage", "bench" + build_suffix())
    if args.callgrind:
        return main_callgrind(args)
    if args.group:
        import group_http
        return group_http.main(["--runs", str(args.runs or 5), "--program",
                                os.path.join(PROGRAMS, "group_http"),
                                "--workload", args.only
                                or "keepalive,churn,placement"])
    return main_timed(args)


if __name__ == "__main__":
    sys.exit(main())
