#!/usr/bin/env bash
# Runs a Windows program (a MinGW-w64 build: b2 target-os=windows) under
# Wine, in this working tree's one Wine prefix, bin/wine-prefix, with Wine's
# own messages off. The exit status is the program's. A prefix is made on
# first use (about 17 s and 700 MB), so make it once and reuse it: --init
# makes it, if missing, and waits until Wine has settled.
#
#   test/wine.sh --init
#   test/wine.sh stage/test/release-windows/loop.exe --log_level=test_suite
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export WINEPREFIX=${WINEPREFIX:-$root/bin/wine-prefix}
export WINEDEBUG=${WINEDEBUG:--all}
wine=${TURNLOOP_WINE:-/usr/lib/wine/wine64}
if [ "${1:-}" = --init ]; then
  mkdir -p "$(dirname "$WINEPREFIX")"
  # wineboot writes the prefix; "failed to open ...syswow64\rundll32.exe" is
  # harmless (wine64 has no 32-bit half).
  "$wine" wineboot --init >/dev/null 2>&1 || true
  "$(dirname "$wine")/wineserver" -w
  exit 0
fi
exec "$wine" "$@"
