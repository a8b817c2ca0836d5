#!/usr/bin/env python3
"""Checks that includes flow one way: public header -> impl -> detail.

The rule (doc/design.md, "Where things are"):
- a vocabulary header (config.hpp, error.hpp, stop_token.hpp, *_stats.hpp:
  plain values that detail code fills, throws or hands over) includes, of turnloop's headers, only
  detail/config.hpp (macros), other vocabulary headers and its own bodies
  (impl/<name>.ipp, header-only);
- a header under detail/ includes, of turnloop's public headers, only
  vocabulary headers, and nothing under impl/;
- impl/ is the implementation of the public headers and may include them.

Prints each broken rule as file:line: the include, and why; exits 1 if any.
Run from anywhere: test/include_direction.py
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "include"
TURNLOOP = INCLUDE / "turnloop"
# Back-edges not removed yet, each with what removing it takes. The list may
# only shrink: an entry that no longer occurs fails the check too.
KNOWN = {
    # The backoff timer's executor is the loop's own (loop::executor_type, a
    # member class only loop.hpp defines): the timer's completion runs in a
    # turn. Removing the edge needs the executor defined outside the loop.
    ("turnloop/detail/accept/handle_service.hpp", "turnloop/loop.hpp"),
}
DIRECTIVE = re.compile(r'^\s*#\s*include\s*[<"](turnloop[^>"]*)[>"]')


def is_vocabulary(header):
    """header: a path under include/, e.g. "turnloop/loop_stats.hpp"."""
    name = header.removeprefix("turnloop/")
    return "/" not in name and (
        name in ("config.hpp", "error.hpp", "stop_token.hpp")
        or name.endswith("_stats.hpp"))


def is_public(header):
    return header == "turnloop.hpp" or (
        header.startswith("turnloop/") and "/" not in header.removeprefix("turnloop/"))


def includes(path):
    with path.open(encoding="utf-8") as text:
        for number, line in enumerate(text, 1):
            match = DIRECTIVE.match(line)
            if match:
                yield number, match.group(1)


def broken(header, included):
    """Why @p header may not include @p included, or None if it may."""
    if is_vocabulary(header):
        own_bodies = ("turnloop/impl/" + header.removeprefix("turnloop/")
                      .removesuffix(".hpp") + ext for ext in (".hpp", ".ipp"))
        if (included != "turnloop/detail/config.hpp"
                and not is_vocabulary(included) and included not in own_bodies):
            return "a vocabulary header includes only detail/config.hpp and vocabulary headers"
    elif header.startswith("turnloop/detail/"):
        if included.startswith("turnloop/impl/"):
            return "detail/ never includes impl/"
        if is_public(included) and not is_vocabulary(included):
            return "detail/ includes no public header but vocabulary ones"
    return None


def main():
    files = sorted(p for p in TURNLOOP.rglob("*")
                   if p.suffix in (".hpp", ".ipp"))
    checked = [p for p in files
               if is_vocabulary(p.relative_to(INCLUDE).as_posix())
               or p.relative_to(TURNLOOP).parts[0] in ("detail", "impl")]
    errors = 0
    known = set()
    for path in checked:
        header = path.relative_to(INCLUDE).as_posix()
        for number, included in includes(path):
            why = broken(header, included)
            if why and (header, included) in KNOWN:
                known.add((header, included))
            elif why:
                print(f"include/{header}:{number}: #include <{included}>: {why}")
                errors += 1
    for header, included in sorted(KNOWN - known):
        print(f"include/{header}: no longer includes <{included}>: "
              "take it off KNOWN in test/include_direction.py")
        errors += 1
    print(f"{len(checked)} headers checked, {errors} back-edges"
          f" ({len(known)} known, listed in KNOWN)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
