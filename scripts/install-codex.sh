#!/usr/bin/env bash
# Installs the pinned real Codex CLI versions from npm into a cache folder, idempotently,
# and writes one line per version, "<version> <native binary> <npm launcher>", to
# $cache/manifest (printed too), where the tests look for them.
# Used by the test command; safe to run again (an installed version is only checked).
set -euo pipefail

versions=${CX_TEST_CODEX_VERSIONS:-"0.171.0 0.128.0"}
cache=${CX_TEST_CODEX_CACHE:-"${XDG_CACHE_HOME:-$HOME/.cache}/cx-test/codex"}

native_of() { # the native binary inside an npm install of @openai/codex
  local dir=$1
  find "$dir/node_modules" -path '*/vendor/*' -type f -name codex -perm -u+x 2>/dev/null | head -n1
}

manifest=$(mktemp)
trap 'rm -f "$manifest"' EXIT
for v in $versions; do
  dir="$cache/$v"
  bin=$(native_of "$dir" || true)
  if [ -z "$bin" ] || ! "$bin" --version 2>/dev/null | grep -q "codex-cli $v"; then
    mkdir -p "$dir"
    echo "installing @openai/codex@$v into $dir" >&2
    for attempt in 1 2 3; do
      if npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@openai/codex@$v" >&2; then
        break
      fi
      [ "$attempt" = 3 ] && { echo "npm install @openai/codex@$v failed" >&2; exit 1; }
      sleep $((attempt * 5))
    done
    bin=$(native_of "$dir")
  fi
  [ -n "$bin" ] || { echo "no native codex binary under $dir" >&2; exit 1; }
  echo "$v $bin $dir/node_modules/.bin/codex" >>"$manifest"
done
mkdir -p "$cache"
cp "$manifest" "$cache/manifest"
cat "$cache/manifest"
