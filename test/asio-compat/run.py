#!/usr/bin/env python3
"""Boost.Asio's own unit tests, run on io_context and on turnloop::loop.

A maintainer tool, not part of CI (it needs a checkout of boostorg/asio, and
Asio's test sources are not the project's to ship). For one Asio version it
takes Asio's test/ directory at the matching tag, and for every listed test
that constructs an io_context it builds and runs two programs: the test as
written (stock) and the test with the declaration of each context object
changed from io_context to turnloop::loop and nothing else (turnloop). It
prints one line per test with both results and a summary; every test that
passes on stock but not on turnloop must be listed in doc/compatibility.md.

  test/asio-compat/run.py --asio 1.81 --repo /path/to/boostorg/asio [-j1]
  test/asio-compat/run.py --asio 1.90 --variant asan io_context strand

--asio is b2's asio= value (1.81 is Debian's Boost; the others need
.ci/asio-headers first). Tests are named as in Asio's test/ without .cpp
(ip/tcp, experimental/coro/simple_test); a trailing /* takes a directory.
Work files land in bin/asio-compat/<version>-<variant>/.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# b2's asio= value -> (git ref of boostorg/asio whose test/ matches the
# headers, include directory in front of Debian's Boost or None).
VERSIONS = {
    "1.81": ("boost-1.81.0", None),
    "1.83": ("boost-1.83.0", "bin/asio-1.83/include"),
    "1.87": ("boost-1.87.0", "bin/asio-1.87/include"),
    "1.89": ("boost-1.89.0", "bin/asio-1.89/include"),
    # ../shared/asio's 1.38 archive is develop at 5963b46 (Asio of Boost
    # 1.90); the boost-1.90.0.beta1 tag still carries Asio 1.37.
    "1.90": ("5963b469", "bin/asio-1.90/include"),
}

# The tests issue 15 names.
DEFAULT_TESTS = [
    "io_context", "io_context_strand", "strand", "post", "dispatch", "defer",
    "co_spawn", "steady_timer", "system_timer", "deadline_timer",
    "signal_set", "executor_work_guard", "bind_executor",
    "bind_cancellation_slot", "cancellation_signal", "cancellation_state",
    "cancellation_type", "compose", "use_future", "deferred", "as_tuple",
    "read", "write", "read_until", "buffered_read_stream",
    "buffered_write_stream", "buffered_stream", "ip/tcp", "ip/udp",
    "ip/basic_resolver", "local/stream_protocol", "local/connect_pair",
    "posix/stream_descriptor", "experimental/awaitable_operators",
    "experimental/channel", "experimental/concurrent_channel",
    "experimental/parallel_group", "experimental/promise",
    "experimental/coro/*", "any_io_executor", "execution/*", "connect",
    "thread_pool",
]

VARIANTS = {
    "release": ["-O2", "-DNDEBUG"],
    "asan": ["-O1", "-g", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"],
}

# A declaration of a context object: `io_context ioc;`, `asio::io_context
# ctx(1);`, `boost::asio::io_context ioc{};`. Not `io_context&`,
# `io_context::executor_type` or `io_context*`: code that refers to a
# context is left as it is, as a user would leave it.
DECLARATION = re.compile(
    r"(?<![\w:])(?:boost::)?(?:asio::)?io_context(\s+)([A-Za-z_]\w*)(\s*[;({])")
UNIT_TEST_INCLUDE = re.compile(r'^#include\s+"(?:\.\./)*unit_test\.hpp"', re.M)


def swap_context(source):
    """The test with each io_context declaration made a turnloop::loop."""
    swapped, count = DECLARATION.subn(
        lambda m: "turnloop::loop" + m.group(1) + m.group(2) + m.group(3),
        source)
    if count == 0:
        return None, 0
    include = "#include <turnloop/loop.hpp>\n"
    m = UNIT_TEST_INCLUDE.search(swapped)
    if m:
        swapped = swapped[:m.start()] + include + swapped[m.start():]
    else:
        swapped = include + swapped
    return swapped, count


def git(repo, *args):
    return subprocess.run(["git", "--git-dir", str(repo), *args], check=True,
                          capture_output=True, text=True).stdout


def list_tests(repo, ref, names):
    files = set(git(repo, "ls-tree", "-r", "--name-only", ref, "test")
                .split())
    tests = []
    for name in names:
        if name.endswith("/*"):
            prefix = "test/" + name[:-1]
            tests += sorted(f[5:-4] for f in files
                            if f.startswith(prefix) and f.endswith(".cpp")
                            and "/" not in f[len(prefix):])
        elif "test/" + name + ".cpp" in files:
            tests.append(name)
        else:
            print(f"note: {name} is not in Asio's test/ at {ref}",
                  file=sys.stderr)
    return tests


def extract(repo, ref, dest):
    """Asio's test/ at ref, unpacked under dest (once per ref)."""
    marker = dest / ".ref"
    if marker.exists() and marker.read_text() == ref:
        return
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", str(repo), "archive", ref,
                              "test"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout,
                   check=True)
    marker.write_text(ref)


class Build:
    def __init__(self, args, work):
        ref, include = VERSIONS[args.asio]
        self.work = work
        self.cxx = [os.environ.get("CXX", "g++"), "-std=c++20", "-pthread",
                    "-w", *VARIANTS[args.variant],
                    "-DBOOST_ASIO_SEPARATE_COMPILATION",
                    "-DBOOST_ALL_NO_LIB=1", "-D_GNU_SOURCE=1",
                    "-I" + str(ROOT / "include")]
        if include:
            path = ROOT / include
            if not (path / "boost/asio/version.hpp").exists():
                sys.exit(f"{path} is missing: run .ci/asio-headers first")
            self.cxx.insert(1, "-I" + str(path))
        self.support = work / "support.a"

    def compile_support(self):
        """Asio and turnloop compiled once, linked by every program."""
        objects = []
        for name, code in (("asio", "#include <boost/asio/impl/src.hpp>\n"),
                           ("turnloop", "#include <turnloop/src.hpp>\n")):
            src = self.work / f"{name}.cpp"
            obj = self.work / f"{name}.o"
            src.write_text(code)
            subprocess.run([*self.cxx, "-c", str(src), "-o", str(obj)],
                           check=True)
            objects.append(str(obj))
        subprocess.run(["ar", "rcs", str(self.support), *objects], check=True)

    def program(self, source, binary, log):
        with open(log, "w") as out:
            r = subprocess.run([*self.cxx, "-I" + str(source.parent),
                                str(source), str(self.support), "-o",
                                str(binary)], stdout=out,
                               stderr=subprocess.STDOUT)
        return r.returncode == 0


def run_program(binary, log, timeout):
    try:
        with open(log, "w") as out:
            r = subprocess.run([str(binary)], stdout=out,
                               stderr=subprocess.STDOUT, timeout=timeout,
                               cwd=binary.parent)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "pass" if r.returncode == 0 else f"fail({r.returncode})"


def first_failure(log):
    """The first line of a log that says what went wrong."""
    try:
        lines = Path(log).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    for line in lines:
        if re.search(r"error|failed|exception|Assertion|ERROR|runtime", line):
            return line.strip()[:160]
    return lines[-1].strip()[:160] if lines else ""


def one_test(build, src_root, name, timeout):
    source = src_root / "test" / (name + ".cpp")
    swapped, count = swap_context(source.read_text())
    if swapped is None:
        return name, 0, "-", "-", ""
    stem = name.replace("/", "__")
    turnloop_source = source.with_name(source.stem + "__turnloop.cpp")
    turnloop_source.write_text(swapped)
    results = []
    for side, src in (("stock", source), ("turnloop", turnloop_source)):
        binary = build.work / f"{stem}.{side}"
        build_log = build.work / f"{stem}.{side}.build.log"
        run_log = build.work / f"{stem}.{side}.run.log"
        reuse = side == "stock" and binary.exists()
        if not reuse and not build.program(src, binary, build_log):
            results.append(("no build", first_failure(build_log)))
            continue
        outcome = run_program(binary, run_log, timeout)
        results.append((outcome, "" if outcome == "pass"
                        else first_failure(run_log)))
    return name, count, results[0][0], results[1][0], results[1][1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("tests", nargs="*", help="default: the issue's list")
    p.add_argument("--asio", default="1.81", choices=sorted(VERSIONS))
    p.add_argument("--repo", default="/work/.mirror/boostorg+asio/repo",
                   help="a git directory of boostorg/asio")
    p.add_argument("--variant", default="release", choices=sorted(VARIANTS))
    p.add_argument("-j", type=int, default=1)
    p.add_argument("--timeout", type=int, default=0,
                   help="seconds per run (default 120, asan 300)")
    args = p.parse_args()
    timeout = args.timeout or (300 if args.variant == "asan" else 120)

    repo = Path(args.repo)
    ref = VERSIONS[args.asio][0]
    work = ROOT / "bin/asio-compat" / f"{args.asio}-{args.variant}"
    src_root = work / "asio"
    extract(repo, ref, src_root)
    tests = list_tests(repo, ref, args.tests or DEFAULT_TESTS)

    build = Build(args, work)
    build.compile_support()

    started = time.time()
    print(f"# Asio's tests at {ref}, asio={args.asio}, {args.variant}")
    print(f"{'test':40} {'decls':>5}  {'stock':10} {'turnloop':10} first failure on turnloop")
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.j) as pool:
        for row in pool.map(lambda t: one_test(build, src_root, t, timeout),
                            tests):
            name, count, stock, ours, why = row
            print(f"{name:40} {count:5}  {stock:10} {ours:10} "
                  f"{why if stock == 'pass' and ours != 'pass' else ''}",
                  flush=True)
            rows.append(row)

    built = [r for r in rows if r[1] > 0]
    passing = [r for r in built if r[2] == "pass"]
    same = [r for r in passing if r[3] == "pass"]
    print(f"\nsummary: {len(rows)} tests listed, {len(built)} construct an "
          f"io_context, {len(passing)} pass on stock, {len(same)} of those "
          f"pass on turnloop ({time.time() - started:.0f} s)")
    for name, _, _, ours, why in passing:
        if ours != "pass":
            print(f"  differs: {name}: {ours}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
