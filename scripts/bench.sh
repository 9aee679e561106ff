#!/usr/bin/env bash
# cx's performance figures, each next to a baseline measured in the
# same run: PTY output throughput through cx vs script(1) vs a direct PTY (and
# cx's peak RSS while relaying), start overhead over running the child directly,
# hook latency at 1 MB and 100 MB of history, many sessions' hooks at once,
# `cx mcp`'s answer to initialize,
# and `cx ctl search` over a 100 MB archive against a 1 MB one.
#
# BASE=<git revision> also builds cx at that revision and runs the hook
# history benchmark through both, alternating (the "before" of a change).
set -euo pipefail
cd "$(dirname "$0")/.."
# Both builds static, as the releases and the tests build cx.
export CGO_ENABLED=0
if [ -n "${BASE:-}" ]; then
  tmp=$(mktemp -d)
  trap 'git worktree remove --force "$tmp/src" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
  git worktree add -q "$tmp/src" "$BASE"
  # BASE's hook client beside its cx when it has one: its hooks run as it installs them.
  (cd "$tmp/src" && go build -o "$tmp/cx-base" ./cmd/cx && { [ ! -d cmd/cx-hook ] || go build -o "$tmp/cx-hook" ./cmd/cx-hook; })
  export CX_BENCH_BASELINE_CX="$tmp/cx-base"
fi
# What cx spends of the model's context at session start and on resume, over
# every recorded rollout; with BASE, the same rollouts through BASE's code too.
go test -run '^$' -bench 'InjectedSize' -benchtime 1x ./inject
if [ -n "${BASE:-}" ]; then
  rm -rf "$tmp/src/testdata/rollouts" && cp -r testdata/rollouts "$tmp/src/testdata/rollouts"
  (cd "$tmp/src" && echo "BASE=$BASE:" && go test -run '^$' -bench 'InjectedSize' -benchtime 1x ./inject)
fi
# CheckpointCommand: `cx ctl checkpoint` at 100 MB and 1 GB (compare with BASE=a4d09e3).
go test -run '^$' -bench 'PTYThroughput|StartOverhead|PTYStartOverhead|HookStdinOpen|AppServerBigFrame|AppServerFrameLatency|PTYEchoLatency|MCPInitialize|CheckpointCommand' -benchtime 1x -count "${COUNT:-3}" ./cmd/cx
go test -run '^$' -bench 'HookLatency' -benchtime 1x -count "${COUNT:-3}" ./lifecycle
CX_BENCH_ROUNDS="${ROUNDS:-5}" go test -run '^$' -bench 'HookHistory' -benchtime 1x -timeout 60m -v ./lifecycle
# Many sessions at once, Codex started without cx (hooks only) and under cx (a run each): 1, 4
# and 16 sessions on one CX_HOME, hooks as processes (hooks/s, p50, p99, max, CPU a hook with the
# hook host's share, the machine's CPU a hook), beside BASE's cx in the same run and two floors
# (hooks only: a Go program and a C one that answer each hook with a no-op, the shell's exec
# included: what any hook costs here under that load); every session must be committed once
# with its turns. Each row pools 5 rounds (its p99 over 5×192 hooks at 16:
# one round's is its second slowest hook).
CX_BENCH_ROUNDS="${SESSION_ROUNDS:-5}" go test -run '^$' -bench 'SessionsAtOnce' -benchtime 1x -timeout 30m -v ./lifecycle
# The third way: one `cx app-server` with 16 threads at once on real Codex and the mock model
# (hooks/s, p50, p99, max, CPU a hook, the app-server cx's CPU beside its Codex's), beside BASE.
CX_BENCH_APPSERVER=1 go test -count=1 -run '^TestBenchAppServerThreads$' -timeout 30m -v ./internal/testing/e2e
# The same with answers as a model streams them: 1,000 words each, a frame a word through cx.
CX_BENCH_APPSERVER=1 CX_BENCH_WORDS=1000 go test -count=1 -run '^TestBenchAppServerThreads$' -timeout 30m -v ./internal/testing/e2e
# What a run costs cx beside its Codex, the chaos run's cx/Codex without its faults: `cx exec` × 16,
# 4 at once, on each installed Codex (per run: the wrapper, its hooks, the hook host, the MCP server,
# Codex), beside BASE, rounds alternated; every session must be committed once.
CX_BENCH_EXEC=1 CX_BENCH_ROUNDS="${EXEC_ROUNDS:-3}" go test -count=1 -run '^TestBenchExecRuns$' -timeout 30m -v ./internal/testing/e2e
# Recall: cx ctl search over a ~100 MB archived session against a ~1 MB one.
go test -run '^$' -bench 'RecallSearch' -benchtime 1x -timeout 20m -v ./lifecycle
# Recall's quality as it is judged: ../shared/recall-dev/measure (LoCoMo's dev split, its
# conversion and scorer) on this build, and on BASE's beside it; the project's own
# LoCoMo bench for its traces; UserPromptSubmit with per-prompt recall on vs off over a
# 1 GB archive (CX_BENCH_RECALL_MB).
if [ -f ../shared/recall-dev/measure ]; then
  mtmp=$(mktemp -d)
  go build -o "$mtmp/cx" ./cmd/cx
  echo "recall-dev/measure, this build:" && bash ../shared/recall-dev/measure "$mtmp/cx"
  if [ -n "${CX_BENCH_BASELINE_CX:-}" ]; then
    echo "recall-dev/measure, BASE=$BASE:" && bash ../shared/recall-dev/measure "$CX_BENCH_BASELINE_CX"
  fi
  # The dev split held out by halves, each measured alone (its own CX_HOME, as unseen
  # conversations are): conversations 0-2 and 3-4; the gap between them is what a
  # method fitted to some conversations loses on others.
  python3 - ../shared/recall-dev/locomo-dev.json "$mtmp" <<'PY'
import json, sys
convs = json.load(open(sys.argv[1]))
json.dump(convs[:3], open(sys.argv[2] + "/half-a.json", "w")); json.dump(convs[3:], open(sys.argv[2] + "/half-b.json", "w"))
PY
  for half in a b; do
    echo "recall-dev/measure, conversations $([ $half = a ] && echo 0-2 || echo 3-4) alone, this build:" && bash ../shared/recall-dev/measure "$mtmp/cx" "$mtmp/half-$half.json" | head -1
    if [ -n "${CX_BENCH_BASELINE_CX:-}" ]; then
      echo "  BASE=$BASE:" && bash ../shared/recall-dev/measure "$CX_BENCH_BASELINE_CX" "$mtmp/half-$half.json" | head -1
    fi
  done
  # A search's cost in instructions beside cx ctl version's, this build and BASE: the same count
  # however busy the machine is (perf stat), where the measure's times move with it.
  if perf stat -e instructions:u true >/dev/null 2>&1; then
    python3 scripts/search-cost.py ../shared/recall-dev/locomo-dev.json "$mtmp/cx" ${CX_BENCH_BASELINE_CX:+"$CX_BENCH_BASELINE_CX"}
  else
    echo "search cost in instructions: perf stat cannot count instructions here"
  fi
  rm -rf "$mtmp"
else
  echo "recall-dev/measure: ../shared/recall-dev is absent; recall's judged figures not measured"
fi
go test -run '^$' -bench 'RecallQuality' -benchtime 1x -timeout 20m -v ./internal/recall
go test -run '^$' -bench 'PromptRecall' -benchtime 1x -timeout 60m -v ./lifecycle
# Per-prompt recall's word lists for a seldom-used project's window amid another's 40,000 turns.
go test -run '^$' -bench 'RecallTermRowsSparse' -benchtime 1x -v ./internal/ledger
go test -run '^$' -bench 'ReadReduce|StopCapture' -benchtime 1x -cpu 1 -count "${COUNT:-3}" ./internal/checkpoint
go test -run '^$' -bench 'TapRelayLatency' -benchtime 1x -count "${COUNT:-3}" ./wrapper
bash scripts/bench-terminal.sh
# Idle CPU of cx beside the real Codex TUI at its prompt (60 s per version).
go test -run '^$' -bench 'IdleCPU' -benchtime 1x -timeout 20m ./internal/testing/e2e
