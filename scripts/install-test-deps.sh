#!/usr/bin/env bash
# Installs what the tests need, idempotently: tmux (for the terminal-driving
# tests) and zstd from apt when missing, and the pinned real Codex CLI versions from npm.
set -euo pipefail
cd "$(dirname "$0")/.."

# zstd: compressed rollouts are tested with files the zstd tool wrote.
missing=""
for tool in tmux zstd; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "installing$missing" >&2
  $sudo apt-get update -qq >&2 || true
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >&2
fi

bash scripts/install-codex.sh >/dev/null
