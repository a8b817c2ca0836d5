#!/usr/bin/env python3
"""The loop_group HTTP comparison (issue 13), interleaved.

Runs stage/bench/group_http (or the path given with --program) for every
(connections, threads, side): sides io_context (one context run by T
threads), io_context_each (one io_context(1) per thread, SO_REUSEPORT),
loop_group (SO_REUSEPORT, one acceptor per loop) and loop_group_handoff (one
acceptor, sockets dealt round robin), at T = 1 and 2, C = 64 and 256 keep-alive connections. Rounds are
interleaved, every configuration once per round; the first round is a warm-up
and is discarded. Prints the median requests/s and requests per server
CPU-second of each, and the two loop_group sides' ratios to the two io_context sides at
the same T. Raw runs go to bench/results/group_http.json.

  group_http.py [--runs N] [--ms M] [--program PATH]

bench/run.sh --group runs it with the programs bench/run.sh builds.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIDES = ["io_context", "io_context_each", "loop_group", "loop_group_handoff"]
GROUP_SIDES = ["loop_group", "loop_group_handoff"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="measured rounds")
    parser.add_argument("--ms", type=int, default=2000, help="window per run")
    parser.add_argument("--program",
                        default=os.path.join(ROOT, "stage", "bench", "group_http"))
    args = parser.parse_args(argv)

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
    print(f"{'C':>4} {'T':>2} {'side':<18} {'req/s':>10} {'cv':>5} "
          f"{'req/CPU-s':>10} {'cv':>5}")
    for c, t, s in configs:
        cfg = (c, t, s)
        print(f"{c:>4} {t:>2} {s:<18} {median(cfg, 'requests_per_s'):>10.0f} "
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
                    print(f"  C={c} T={t} {side:<18} vs {other:<16} "
                          f"{median(g, 'requests_per_s') / median(o, 'requests_per_s'):.2f}x; "
                          f"{median(g, 'requests_per_cpu_s') / median(o, 'requests_per_cpu_s'):.2f}x")
        for side in SIDES:
            one = median((c, 1, side), "requests_per_s")
            two = median((c, 2, side), "requests_per_s")
            print(f"  C={c} {side:<18} 2 threads / 1 thread: {two / one:.2f}x")

    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "group_http.json"), "w") as f:
        json.dump({"runs": {f"{c}/{t}/{s}": v for (c, t, s), v in runs.items()},
                   "machine": platform.node(), "cpus": os.cpu_count()}, f,
                  indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
