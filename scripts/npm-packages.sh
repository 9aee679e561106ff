#!/usr/bin/env bash
# Builds cx's npm packages the way Codex ships its own: one small package
# per platform holding the native binary, picked by npm through os/cpu
# (@cx-cli/cx-<os>-<cpu>), and the main package @cx-cli/cx, whose bin runs
# the right one (npm/cx.js). Reads the release archives in DIST (the
# snapshot `make dist` builds; tests give a directory of their own), writes
# the packed tarballs to OUT. VERSION is the release's (default: the one
# GoReleaser wrote in DIST/metadata.json). Nothing is published.
#
#   scripts/npm-packages.sh DIST OUT [VERSION]
set -euo pipefail
dist=$1 out=$2
version=${3:-$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' "$dist/metadata.json")}
version=${version%%+*} # npm drops build metadata
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
deps=""
for a in "$dist"/cx_*_*.tar.gz; do
  base=$(basename "$a" .tar.gz)
  os=${base#cx_}; os=${os%_*}
  arch=${base##*_}
  case $arch in amd64) cpu=x64 ;; arm64) cpu=arm64 ;; *) echo "npm: no npm cpu for $arch" >&2; exit 1 ;; esac
  name="@cx-cli/cx-$os-$cpu"
  dir="$build/cx-$os-$cpu"
  mkdir -p "$dir/bin"
  tar -xzf "$a" -C "$dir/bin" cx cx-hook cx-mcp
  # The licence of the word vectors the binary embeds (internal/nearwords).
  tar -xzf "$a" -C "$dir" LICENSE-vectors
  cat >"$dir/package.json" <<JSON
{
  "name": "$name",
  "version": "$version",
  "description": "cx for $os/$cpu: the native binary @cx-cli/cx runs",
  "os": ["$os"],
  "cpu": ["$cpu"],
  "files": ["bin/cx", "bin/cx-hook", "bin/cx-mcp", "LICENSE-vectors"],
  "preferUnplugged": true
}
JSON
  (cd "$dir" && npm pack --silent --pack-destination "$out" >/dev/null)
  deps="$deps${deps:+,}\"$name\": \"$version\""
done
[ -n "$deps" ] || { echo "npm: no release archives in $dist" >&2; exit 1; }
main="$build/cx"
mkdir -p "$main/bin"
cp "$root/npm/cx.js" "$main/bin/cx.js"
cp "$root/README.md" "$main/README.md"
cat >"$main/package.json" <<JSON
{
  "name": "@cx-cli/cx",
  "version": "$version",
  "description": "A launcher and supervisor for the OpenAI Codex CLI that commits every session to your memory exactly once",
  "bin": { "cx": "bin/cx.js" },
  "files": ["bin/cx.js", "README.md"],
  "engines": { "node": ">=16" },
  "optionalDependencies": { $deps }
}
JSON
(cd "$main" && npm pack --silent --pack-destination "$out" >/dev/null)
ls "$out"
