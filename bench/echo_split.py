#!/usr/bin/env python3
"""Pooled echo, the server's CPU per message split into user and system time.

Runs stage/bench/tcp echo_pooled on four sides, interleaved (one run of each
side per round), and prints each side's medians: messages per second, the
server thread's user, system and total CPU microseconds per message
(getrusage RUSAGE_THREAD), the ring's system calls per message, and the
messages per second against stock io_context's. doc/io_uring.md, "Where the
server's time goes", has what the split says.

  bench/echo_split.py [--runs 7] [--connections 256,64] [--program <tcp program>]

The program is stage/bench/tcp unless --program names another (bench/run.sh
builds it).
"""

import argparse
import os
import statistics
import sys

import run as bench  # run_child: one measurement, its JSON or its failure

SIDES = {
    "io_uring": ["--side", "turnloop", "--config", "pooled_io_uring"],
    "epoll": ["--side", "turnloop"],
    "io_context": ["--side", "io_context"],
    "io_context(1)": ["--side", "io_context_1"],
}
FIELDS = ("server_user_us_per_message", "server_system_us_per_message",
          "server_cpu_us_per_message", "server_syscalls_per_message")


def run(program, side_args, connections):
    result = bench.run_child([program, "echo_pooled", *side_args,
                              "--connections", str(connections)])
    if result.get("status") != "ok":
        sys.exit(f"{result['command']}: {result.get('failure', result)}")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--connections", default="256,64")
    parser.add_argument("--program",
                        default=os.path.join(bench.PROGRAMS, "tcp"))
    args = parser.parse_args()
    counts = [int(c) for c in args.connections.split(",") if c]
    print(f"{'C':>4} {'side':14} {'msgs/s':>9} {'user':>6} {'system':>6} "
          f"{'total':>6} {'calls':>6} {'/io_context':>11}   "
          f"(medians of {args.runs}, µs per message)")
    for c in counts:
        rows = {name: [] for name in SIDES}
        for _ in range(args.runs):
            for name, side_args in SIDES.items():
                rows[name].append(run(args.program, side_args, c))
        medians = {}
        for name, results in rows.items():
            m = {"messages_per_s": statistics.median(
                r["metrics"]["messages_per_s"] for r in results)}
            for f in FIELDS:
                values = [r["details"][f] for r in results if f in r["details"]]
                m[f] = statistics.median(values) if values else None
            medians[name] = m
        base = medians["io_context"]["messages_per_s"]
        for name, m in medians.items():
            calls = m["server_syscalls_per_message"]
            print(f"{c:>4} {name:14} {m['messages_per_s']:>9.0f} "
                  f"{m[FIELDS[0]]:>6.3f} {m[FIELDS[1]]:>6.3f} "
                  f"{m[FIELDS[2]]:>6.3f} "
                  f"{'' if calls is None else format(calls, '.3f'):>6} "
                  f"{m['messages_per_s'] / base:>11.2f}")


if __name__ == "__main__":
    main()
