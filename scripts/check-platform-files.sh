#!/usr/bin/env bash
# No Linux-only call outside a _linux.go file: the names below exist only
# in Linux's syscall tables (or only on Linux's /proc), so code using them
# elsewhere would not build — or not work — on macOS. Tests may read /proc
# (they run here); production code may not.
set -euo pipefail
cd "$(dirname "$0")/.."
pattern='Pdeathsig|Pipe2|Inotify|IN_CREATE|TCGETS|TCSETS|"/proc/|/proc/self|/proc/locks'
bad=$(git ls-files '*.go' | while read -r f; do [ -f "$f" ] && echo "$f"; done | grep -v '_linux\.go$' | grep -v '_test\.go$' | grep -v '^internal/testing/codextest/' | grep -v '^internal/testing/e2e/' |
  xargs grep -nE "$pattern" | grep -vE '^[^:]+:[0-9]+:\s*//' || true)
if [ -n "$bad" ]; then
  echo "Linux-only calls outside _linux.go files:" >&2
  echo "$bad" >&2
  exit 1
fi
