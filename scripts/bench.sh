#!/usr/bin/env bash
# cx's performance figures, each next to a baseline measured in the
# same run: PTY output throughput through cx vs script(1) vs a direct PTY (and
# cx's peak RSS while relaying), and start overhead over running the child directly.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'PTYThroughput|StartOverhead' -benchtime 1x -count "${COUNT:-3}" ./cmd/cx
go test -run '^$' -bench 'HookLatency' -benchtime 1x -count "${COUNT:-3}" ./lifecycle
go test -run '^$' -bench 'ReadReduce|StopCapture' -benchtime 1x -cpu 1 -count "${COUNT:-3}" ./internal/checkpoint
go test -run '^$' -bench 'TapRelayLatency' -benchtime 1x -count "${COUNT:-3}" ./wrapper
