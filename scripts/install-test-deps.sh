#!/usr/bin/env bash
# Installs what the tests need, idempotently: tmux (for the terminal-driving
# tests) from apt when missing, and the pinned real Codex CLI versions from npm.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v tmux >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "installing tmux" >&2
  $sudo apt-get update -qq >&2 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq tmux >&2
fi

bash scripts/install-codex.sh >/dev/null
