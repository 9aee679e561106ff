#!/usr/bin/env bash
# Builds cx for each GOOS/GOARCH given into dist/ (cx-<os>-<arch>), with
# the version stamped in (VERSION) and dist/SHA256SUMS; with --check, runs
# the binary for this machine (linux/amd64 in CI) and checks that it says
# that version.
set -euo pipefail
cd "$(dirname "$0")/.."
out=dist
if [ "${1:-}" = "--check" ]; then
  want=$(cat "$out/VERSION")
  bin="$out/cx-$(go env GOOS)-$(go env GOARCH)"
  got=$(CX_HOME="$(mktemp -d)/cx" CX_CODEX_BIN=/nonexistent "$bin" ctl version --json | sed -n 's/.*"version": *"\([^"]*\)".*/\1/p')
  if [ "$got" != "$want" ]; then
    echo "dist: $bin says version '$got', want '$want'" >&2
    exit 1
  fi
  (cd "$out" && sha256sum --check --quiet SHA256SUMS)
  echo "dist: $bin is cx $got; SHA256SUMS match"
  exit 0
fi
version=${VERSION:-dev}
rm -rf "$out"
mkdir -p "$out"
for target in "$@"; do
  os=${target%/*}
  arch=${target#*/}
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$out/cx-$os-$arch" ./cmd/cx
done
echo "$version" > "$out/VERSION"
(cd "$out" && sha256sum cx-* > SHA256SUMS)
cat "$out/SHA256SUMS"
