#!/usr/bin/env python3
"""The loop_group HTTP comparison (issue 13), interleaved.

Runs stage/bench/group_http (or the path given with --program) for every
(connections, threads, side): sides io_context (one context run by T
threads), io_context_each (one io_context(1) per thread, SO_REUSEPORT),
loop_group (SO_REUSEPORT, one acceptor per loop), loop_group_handoff (one
acceptor, sockets dealt round robin) and loop_group_handoff_native (the
same on turnloop::loop::executor_type instead of any_io_executor), at T = 1
and 2, C = 64 and 256 keep-alive connections. Rounds are interleaved, every
configuration once per round; the first round is a warm-up and is
discarded. Prints the median requests/s and requests per server CPU-second
of each, and the loop_group sides' ratios to the two io_context sides at
the same T. Raw runs go to bench/results/group_http.json.

  group_http.py [--runs N] [--ms M] [--program PATH]
  group_http.py --counts [--program PATH]

--counts measures what does not depend on the machine's load instead: one
run per (threads, side) at C = 64, the server under callgrind (instructions
per request answered) and, separately, under strace -f (system calls per
request answered, the server's threads only). Under valgrind the server's
threads take turns, so the instruction counts show each side's own work,
not what contention costs it.

bench/run.sh --group runs it with the programs bench/run.sh builds.
"""

import argparse
import glob
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIDES = ["io_context", "io_context_each", "loop_group", "loop_group_handoff",
         "loop_group_handoff_native"]
GROUP_SIDES = SIDES[2:]


def callgrind_total(path):
    with open(path) as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    return None


def server_threads(prefix, pid):
    """The tids of process @p pid from strace -ff files: its own and those
    its threads cloned, transitively."""
    tids, todo = set(), [pid]
    while todo:
        tid = todo.pop()
        if tid in tids:
            continue
        tids.add(tid)
        try:
            with open(f"{prefix}.{tid}") as f:
                for line in f:
                    m = re.match(r"clone3?\(.*\)\s*=\s*(\d+)", line)
                    if m and "CLONE_THREAD" in line:
                        todo.append(int(m.group(1)))
        except FileNotFoundError:
            pass
    return tids


def counts(program):
    sides = [(t, s) for t in (1, 2) for s in SIDES]
    base = [program, "--connections", "64", "--ms", "2000"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for t, s in sides:
            cmd = base + ["--side", s, "--threads", str(t)]
            out = subprocess.run(
                ["valgrind", "--tool=callgrind",
                 f"--callgrind-out-file={tmp}/cg.%p"] + cmd,
                capture_output=True, text=True, timeout=600)
            r = json.loads(out.stdout)
            ir = callgrind_total(f"{tmp}/cg.{r['server_pid']}")
            ir_per = ir / r["server_answered"]
            out = subprocess.run(["strace", "-f", "-ff", "-o", f"{tmp}/st"] + cmd,
                                 capture_output=True, text=True, timeout=600)
            r2 = json.loads(out.stdout)
            calls = {}
            for tid in server_threads(f"{tmp}/st", r2["server_pid"]):
                try:
                    with open(f"{tmp}/st.{tid}") as f:
                        for line in f:
                            m = re.match(r"(\w+)\(", line)
                            if m:
                                calls[m.group(1)] = calls.get(m.group(1), 0) + 1
                except FileNotFoundError:
                    pass
            n = r2["server_answered"]
            top = sorted(calls.items(), key=lambda kv: -kv[1])[:4]
            rows.append((t, s, ir_per, sum(calls.values()) / n,
                         ", ".join(f"{k} {v / n:.2f}" for k, v in top)))
            for f in glob.glob(f"{tmp}/st.*") + glob.glob(f"{tmp}/cg.*"):
                os.remove(f)
            print(f"  T={t} {s}: {ir_per:.0f} Ir/request, "
                  f"{rows[-1][3]:.2f} syscalls/request", file=sys.stderr)
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs; C=64, one run "
          "per side; server only")
    print(f"{'T':>2} {'side':<26} {'Ir/req':>8} {'sys/req':>8}  top calls per request")
    for t, s, ir_per, sys_per, top in rows:
        print(f"{t:>2} {s:<26} {ir_per:>8.0f} {sys_per:>8.2f}  {top}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="measured rounds")
    parser.add_argument("--ms", type=int, default=2000, help="window per run")
    parser.add_argument("--program",
                        default=os.path.join(ROOT, "stage", "bench", "group_http"))
    parser.add_argument("--counts", action="store_true",
                        help="instructions and system calls per request")
    args = parser.parse_args(argv)
    if args.counts:
        return counts(args.program)

    configs = [(c, t, s) for c in (64, 256) for t in (1, 2) for s in SIDES]
    runs = {cfg: [] for cfg in configs}
    for round_ in range(args.runs + 1):
        for c, t, s in configs:
            out = subprocess.run(
                [args.program, "--side", s, "--threads", str(t),
                 "--connections", str(c), "--ms", str(args.ms)],
                capture_output=True, text=True, timeout=120)
            if out.returncode != 0:
                print(f"{s} T={t} C={c} failed: {out.stdout}{out.stderr}",
                      file=sys.stderr)
                return 1
            if round_ > 0:
                runs[(c, t, s)].append(json.loads(out.stdout))

    def median(cfg, key):
        return statistics.median(r[key] for r in runs[cfg])

    def spread(cfg, key):
        values = [r[key] for r in runs[cfg]]
        mean = statistics.mean(values)
        return statistics.pstdev(values) / mean if mean else 0.0

    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs; "
          f"{args.runs} rounds of {args.ms} ms, medians (cv)")
    print(f"{'C':>4} {'T':>2} {'side':<26} {'req/s':>10} {'cv':>5} "
          f"{'req/CPU-s':>10} {'cv':>5}")
    for c, t, s in configs:
        cfg = (c, t, s)
        print(f"{c:>4} {t:>2} {s:<26} {median(cfg, 'requests_per_s'):>10.0f} "
              f"{spread(cfg, 'requests_per_s'):>5.2f} "
              f"{median(cfg, 'requests_per_cpu_s'):>10.0f} "
              f"{spread(cfg, 'requests_per_cpu_s'):>5.2f}")
    print("ratios (req/s; req/CPU-s):")
    for c in (64, 256):
        for t in (1, 2):
            for side in GROUP_SIDES:
                g = (c, t, side)
                for other in ("io_context", "io_context_each"):
                    o = (c, t, other)
                    print(f"  C={c} T={t} {side:<26} vs {other:<16} "
                          f"{median(g, 'requests_per_s') / median(o, 'requests_per_s'):.2f}x; "
                          f"{median(g, 'requests_per_cpu_s') / median(o, 'requests_per_cpu_s'):.2f}x")
        for side in SIDES:
            one = median((c, 1, side), "requests_per_s")
            two = median((c, 2, side), "requests_per_s")
            print(f"  C={c} {side:<26} 2 threads / 1 thread: {two / one:.2f}x")

    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "group_http.json"), "w") as f:
        json.dump({"runs": {f"{c}/{t}/{s}": v for (c, t, s), v in runs.items()},
                   "machine": platform.node(), "cpus": os.cpu_count()}, f,
                  indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
