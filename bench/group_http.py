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

  group_http.py [--workload W] [--runs N] [--ms M] [--program PATH]
  group_http.py --counts [--workload W] [--program PATH]

Workloads (--workload, comma-separated; default keepalive):
  keepalive  the comparison above.
  churn      accept churn: a new connection for every request (the client
             resets it after the response and connects again), C = 64,
             T = 1 and 2, sides io_context, io_context_each, loop_group
             (SO_REUSEPORT, Asio's async_accept), sharded_acceptor (the
             same with turnloop::async_accept), loop_group_handoff (the hand-made hand-off,
             round robin, no live count), group_acceptor_rr and group_acceptor_lc
             (turnloop::group_acceptor, round robin and least connections).
             With one request per connection, requests per CPU-second are
             accepts per CPU-second.
  placement  group_acceptor_rr against group_acceptor_lc at T = 2: keep-alive
             (C = 64 and 256), and connections of unequal lifetimes (C = 64,
             every other client reconnecting after every 4 requests, the
             rest keeping theirs); also each loop's live connections when
             the server stopped.

--counts measures what does not depend on the machine's load instead: one
run per (threads, side) at C = 64, the server under callgrind (instructions
per request answered; with --workload churn, per connection accepted) and,
separately, under strace -f (system calls per request answered, or per
connection accepted). Under valgrind the server's
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
CHURN_SIDES = ["io_context", "io_context_each", "loop_group",
               "sharded_acceptor", "loop_group_handoff", "group_acceptor_rr",
               "group_acceptor_lc"]

# (connections, threads, side, reconnect, churn) per workload.
WORKLOADS = {
    "keepalive": [(c, t, s, 0, "all") for c in (64, 256) for t in (1, 2)
                  for s in SIDES],
    "churn": [(64, t, s, 1, "all") for t in (1, 2) for s in CHURN_SIDES],
    "placement": [(c, 2, s, r, ch)
                  for c, r, ch in ((64, 0, "all"), (256, 0, "all"),
                                   (64, 4, "half"))
                  for s in ("group_acceptor_rr", "group_acceptor_lc")],
}


def command(program, cfg, ms):
    c, t, s, r, ch = cfg
    return [program, "--side", s, "--threads", str(t), "--connections",
            str(c), "--ms", str(ms), "--reconnect", str(r), "--churn", ch]


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


def counts(program, workload):
    churn = workload == "churn"
    sides = [(t, s) for t in (1, 2) for s in (CHURN_SIDES if churn else SIDES)]
    base = [program, "--connections", "64", "--ms", "2000"]
    if churn:
        base += ["--reconnect", "1"]
    per = "server_accepted" if churn else "server_answered"
    unit = "accept" if churn else "request"
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
            ir_per = ir / r[per]
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
            n = r2[per]
            top = sorted(calls.items(), key=lambda kv: -kv[1])[:4]
            rows.append((t, s, ir_per, sum(calls.values()) / n,
                         ", ".join(f"{k} {v / n:.2f}" for k, v in top)))
            for f in glob.glob(f"{tmp}/st.*") + glob.glob(f"{tmp}/cg.*"):
                os.remove(f)
            print(f"  T={t} {s}: {ir_per:.0f} Ir/{unit}, "
                  f"{rows[-1][3]:.2f} syscalls/{unit}", file=sys.stderr)
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs; C=64, one run "
          f"per side; server only; per {unit}"
          + (" (a new connection per request)" if churn else ""))
    print(f"{'T':>2} {'side':<26} {'Ir':>8} {'sys':>8}  top calls per {unit}")
    for t, s, ir_per, sys_per, top in rows:
        print(f"{t:>2} {s:<26} {ir_per:>8.0f} {sys_per:>8.2f}  {top}")
    return 0


def measure(program, workload, rounds, ms):
    configs = WORKLOADS[workload]
    runs = {cfg: [] for cfg in configs}
    for round_ in range(rounds + 1):
        for cfg in configs:
            out = subprocess.run(command(program, cfg, ms),
                                 capture_output=True, text=True, timeout=120)
            if out.returncode != 0:
                print(f"{cfg} failed: {out.stdout}{out.stderr}",
                      file=sys.stderr)
                return None
            if round_ > 0:
                runs[cfg].append(json.loads(out.stdout))
    return runs


def report(workload, runs, rounds, ms):
    def median(cfg, key):
        return statistics.median(r[key] for r in runs[cfg])

    def spread(cfg, key):
        values = [r[key] for r in runs[cfg]]
        mean = statistics.mean(values)
        return statistics.pstdev(values) / mean if mean else 0.0

    print(f"== {workload}: machine {platform.node()}, {os.cpu_count()} CPUs; "
          f"{rounds} rounds of {ms} ms, medians (cv)")
    print(f"{'C':>4} {'T':>2} {'R':>2} {'churn':<5} {'side':<26} {'req/s':>10} "
          f"{'cv':>5} {'req/CPU-s':>10} {'cv':>5}  live at stop")
    for cfg in runs:
        c, t, s, r, ch = cfg
        live = ([x["live_at_stop"] for x in runs[cfg]]
                if s.startswith("group_acceptor") else "")
        print(f"{c:>4} {t:>2} {r:>2} {ch:<5} {s:<26} "
              f"{median(cfg, 'requests_per_s'):>10.0f} "
              f"{spread(cfg, 'requests_per_s'):>5.2f} "
              f"{median(cfg, 'requests_per_cpu_s'):>10.0f} "
              f"{spread(cfg, 'requests_per_cpu_s'):>5.2f}  {live}")
    print("ratios (req/s; req/CPU-s):")

    def ratio(g, o):
        print(f"  C={g[0]} T={g[1]} R={g[3]} {g[2]:<26} vs {o[2]:<18} "
              f"{median(g, 'requests_per_s') / median(o, 'requests_per_s'):.2f}x; "
              f"{median(g, 'requests_per_cpu_s') / median(o, 'requests_per_cpu_s'):.2f}x")

    if workload == "placement":
        for cfg in runs:
            if cfg[2] == "group_acceptor_lc":
                ratio(cfg, (cfg[0], cfg[1], "group_acceptor_rr") + cfg[3:])
        return
    for cfg in runs:
        c, t, s, r, ch = cfg
        if s.startswith(("loop_group", "group_acceptor", "sharded")):
            for other in ("io_context", "io_context_each"):
                ratio(cfg, (c, t, other, r, ch))
    for cfg in runs:
        c, t, s, r, ch = cfg
        if t == 2 and (c, 1, s, r, ch) in runs:
            one = median((c, 1, s, r, ch), "requests_per_s")
            two = median(cfg, "requests_per_s")
            print(f"  C={c} R={r} {s:<26} 2 threads / 1 thread: {two / one:.2f}x")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="measured rounds")
    parser.add_argument("--ms", type=int, default=2000, help="window per run")
    parser.add_argument("--workload", default="keepalive",
                        help="keepalive, churn, placement (comma-separated)")
    parser.add_argument("--program",
                        default=os.path.join(ROOT, "stage", "bench", "group_http"))
    parser.add_argument("--counts", action="store_true",
                        help="instructions and system calls per request")
    args = parser.parse_args(argv)
    workloads = args.workload.split(",")
    for w in workloads:
        if w not in WORKLOADS:
            parser.error(f"unknown workload {w}")
    if args.counts:
        for w in workloads:
            counts(args.program, w)
        return 0

    results = {}
    for w in workloads:
        runs = measure(args.program, w, args.runs, args.ms)
        if runs is None:
            return 1
        report(w, runs, args.runs, args.ms)
        results[w] = {"/".join(map(str, cfg)): v for cfg, v in runs.items()}

    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    name = "group_http.json" if workloads == ["keepalive"] else (
        "group_http-" + "-".join(workloads) + ".json")
    with open(os.path.join(ROOT, "bench", "results", name), "w") as f:
        json.dump({"runs": results, "machine": platform.node(),
                   "cpus": os.cpu_count()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
