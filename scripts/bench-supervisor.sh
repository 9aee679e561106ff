#!/usr/bin/env bash
# The supervisor's performance figures, each next to a baseline measured in the
# same run: PTY output throughput through cx vs script(1) vs a direct PTY (and
# cx's peak RSS while relaying), and start overhead over running the child directly.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'PTYThroughput|StartOverhead' -benchtime 1x -count "${COUNT:-3}" ./cmd/cx
