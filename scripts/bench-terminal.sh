#!/usr/bin/env bash
# PTY output the way a user meets it: a terminal program (script(1) as the
# outer terminal, reading the PTY like an emulator) shows 32 MiB that `cat`
# writes — directly, through a second script(1) (the same number of relays
# as cx), through cx, and through cx without its session leader
# (CX_TEST_NO_LEADER=1), and through the least relay there is
# (scripts/minrelay.c). Paired rounds: medians, the median of the
# per-round ratios, and the CPU each run's processes used (the outer
# script(1) and cat included; the kernel's PTY workers not). ROUNDS
# (default 7); CX_BENCH_BASELINE_CX=<cx binary> adds that cx (before a
# change) to the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/cx" ./cmd/cx
head -c 25165824 /dev/urandom | base64 -w 100 >"$tmp/big.txt"
truncate -s 33554432 "$tmp/big.txt"
cat >"$tmp/codex" <<'SH'
#!/bin/sh
case "$1" in
--version) echo "codex-cli 0.0.0-bench"; exit 0 ;;
--help) printf 'Commands:\n  exec  Run\n\nOptions:\n  -h, --help\n          Print help\n'; exit 0 ;;
esac
exec cat "$@"
SH
chmod +x "$tmp/codex"
export CX_CODEX_BIN="$tmp/codex" CX_HOME="$tmp/cxhome" TERM=xterm
F="$tmp/big.txt"
declare -A cmd=(
  [direct]="cat $F"
  [script-in-script]="script -qec 'cat $F' /dev/null"
  [cx]="$tmp/cx $F"
  [cx-no-leader]="env CX_TEST_NO_LEADER=1 $tmp/cx $F"
)
names=(direct script-in-script cx cx-no-leader)
# The floor for any relay on this machine: scripts/minrelay.c, blocking
# read and write and nothing else (needs a C compiler; left out without one).
if cc -O2 -o "$tmp/minrelay" scripts/minrelay.c -lutil 2>/dev/null; then
  cmd[min-relay]="$tmp/minrelay cat $F"
  names+=(min-relay)
fi
if [ -n "${CX_BENCH_BASELINE_CX:-}" ]; then # cx before a change (scripts/bench.sh BASE=rev)
  cmd[cx-base]="$CX_BENCH_BASELINE_CX $F"
  names+=(cx-base)
fi
script -qec "${cmd[cx]}" /dev/null >/dev/null </dev/null # warm the caps cache
for n in "${names[@]}"; do : >"$tmp/t.$n"; : >"$tmp/c.$n"; done
TIMEFORMAT='%U %S' # bash's time: CPU of the run's whole process tree
for ((i = 0; i < ${ROUNDS:-7}; i++)); do
  for n in "${names[@]}"; do
    s=$(date +%s%N)
    { time script -qec "${cmd[$n]}" /dev/null >/dev/null </dev/null; } 2>"$tmp/cpu"
    echo $(($(date +%s%N) - s)) >>"$tmp/t.$n"
    awk '{print ($1 + $2) * 1000}' "$tmp/cpu" >>"$tmp/c.$n"
  done
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A med
for n in "${names[@]}"; do
  med[$n]=$(median "$tmp/t.$n")
  awk -v n="$n" -v t="${med[$n]}" -v c="$(median "$tmp/c.$n")" 'BEGIN {
    printf "%-17s median %.3f s  %.0f MB/s  CPU %.0f ms (user+sys, all its processes)\n", n, t/1e9, 33.554432/(t/1e9), c }'
done
# Throughput of cx over each other variant, round by round (the rounds are
# paired: each ran every variant in turn), then the median and the middle
# half of those ratios.
for n in "${names[@]}"; do
  [ "$n" = cx ] && continue
  paste "$tmp/t.$n" "$tmp/t.cx" | awk '{print $1 / $2}' | sort -n | awk -v n="$n" '{r[NR] = $1} END {
    printf "throughput cx/%-16s %.2f  (median of %d paired rounds; middle half %.2f-%.2f)\n", n, r[int((NR + 1) / 2)], NR, r[int(NR / 4) + 1], r[int(3 * NR / 4) + 1] }'
done
if [ -n "${med[min-relay]:-}" ]; then
  paste "$tmp/t.direct" "$tmp/t.min-relay" | awk '{print $1 / $2}' | sort -n | awk '{r[NR] = $1} END {
    printf "throughput min-relay/direct %.2f  (the floor for any relay here)\n", r[int((NR + 1) / 2)] }'
fi
