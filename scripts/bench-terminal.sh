#!/usr/bin/env bash
# PTY output the way a user meets it: a terminal program (script(1) as the
# outer terminal, reading the PTY like an emulator) shows 32 MiB that `cat`
# writes — directly, through a second script(1) (the same number of relays
# as cx), through cx, and through cx without its session leader
# (CX_TEST_NO_LEADER=1). Paired rounds, medians, ratios. ROUNDS (default 7).
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
script -qec "${cmd[cx]}" /dev/null >/dev/null </dev/null # warm the caps cache
for n in "${names[@]}"; do : >"$tmp/t.$n"; done
for ((i = 0; i < ${ROUNDS:-7}; i++)); do
  for n in "${names[@]}"; do
    s=$(date +%s%N)
    script -qec "${cmd[$n]}" /dev/null >/dev/null </dev/null
    echo $(($(date +%s%N) - s)) >>"$tmp/t.$n"
  done
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A med
for n in "${names[@]}"; do
  med[$n]=$(median "$tmp/t.$n")
  awk -v n="$n" -v t="${med[$n]}" 'BEGIN {printf "%-17s median %.3f s  %.0f MB/s\n", n, t/1e9, 33.554432/(t/1e9)}'
done
awk -v a="${med[script-in-script]}" -v b="${med[cx]}" -v c="${med[direct]}" -v d="${med[cx-no-leader]}" 'BEGIN {
  printf "throughput cx/script-in-script %.2f, cx/direct %.2f, cx/cx-no-leader %.2f\n", a/b, c/b, d/b }'
