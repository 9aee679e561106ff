#!/usr/bin/env bash
# Checks the snapshot `make dist` (GoReleaser) left in dist/ the way a user
# meets it: the checksums hold; the archive for this machine holds a cx
# that reports the snapshot's version; `curl <site>/install.sh | sh`
# installs it from dist/ served on 127.0.0.1 into a fresh prefix, with no
# Go on PATH, and cx ctl doctor runs; the Homebrew formula
# names each archive with its checksum; npm installs cx from the packages
# offline and runs it through its shim; dpkg -i installs the deb (into a
# root of its own) and its cx runs.
set -euo pipefail
cd "$(dirname "$0")/.."
dist=dist
version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' "$dist/metadata.json")
[ -n "$version" ] || { echo "release-check: no version in $dist/metadata.json" >&2; exit 1; }
(cd "$dist" && sha256sum --check --quiet checksums.txt)

os=$(go env GOOS)
arch=$(go env GOARCH)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$dist/cx_${os}_${arch}.tar.gz" -C "$tmp"
for f in cx cx-hook cx-mcp README.md LICENSE-vectors $(ls LICENSE* 2>/dev/null); do
  [ -f "$tmp/$f" ] || { echo "release-check: the archive holds no $f" >&2; exit 1; }
done
export CX_HOME="$tmp/cx-home" CODEX_HOME="$tmp/codex" CX_CODEX_BIN=/nonexistent
got=$("$tmp/cx" ctl version --json | sed -n 's/.*"version": *"\([^"]*\)".*/\1/p')
[ "$got" = "$version" ] || { echo "release-check: the archive's cx says version '$got', want '$version'" >&2; exit 1; }

# The release's download site on 127.0.0.1 (the archives, checksums.txt and
# install.sh, as the release publishes them), and the one-line install
# from it, with neither Go nor the repository on PATH.
site="$tmp/site"
mkdir -p "$site"
cp "$dist"/cx_*.tar.gz "$dist/checksums.txt" scripts/install.sh "$site/"
go build -o "$tmp/servedir" ./internal/testing/install/servedir
"$tmp/servedir" "$site" >"$tmp/url" &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 50); do [ -s "$tmp/url" ] && break; sleep 0.1; done
url=$(head -n1 "$tmp/url")
(cd "$tmp" && PATH=/usr/bin:/bin HOME="$tmp/home" sh -c "curl -fsSL $url/install.sh | CX_INSTALL_BASE_URL=$url sh -s -- --prefix $tmp/prefix") >"$tmp/install.out"
for want in "cx installed: $tmp/prefix/bin/cx" "ok   config"; do # the install, then doctor's first check
  grep -q "$want" "$tmp/install.out" || { echo "release-check: the install's output lacks '$want':" >&2; cat "$tmp/install.out" >&2; exit 1; }
done
"$tmp/prefix/bin/cx" ctl version --json | grep -q "\"$version\""
[ -x "$tmp/prefix/bin/cx-hook" ] || { echo "release-check: the install put no cx-hook beside cx" >&2; exit 1; }
[ -x "$tmp/prefix/bin/cx-mcp" ] || { echo "release-check: the install put no cx-mcp beside cx" >&2; exit 1; }

formula="$dist/homebrew/Formula/cx.rb"
for a in cx_darwin_amd64 cx_darwin_arm64 cx_linux_amd64 cx_linux_arm64; do
  sum=$(awk -v f="$a.tar.gz" '$2 == f { print $1 }' "$dist/checksums.txt")
  grep -A1 "url \".*/$a.tar.gz\"" "$formula" | grep -q "sha256 \"$sum\"" ||
    { echo "release-check: the formula does not name $a.tar.gz with its checksum $sum" >&2; exit 1; }
done

npmv=${version%%+*}
npm_config_cache="$tmp/npm-cache" npm install -g --prefix "$tmp/npm" --offline --no-audit --no-fund \
  "$dist/npm/cx-cli-cx-$npmv.tgz" "$dist/npm/cx-cli-cx-$os-$(case $arch in amd64) echo x64 ;; *) echo "$arch" ;; esac)-$npmv.tgz" >/dev/null
"$tmp/npm/bin/cx" ctl version --json | grep -q "\"$version\""
ls "$tmp"/npm/lib/node_modules/@cx-cli/cx-*/bin/cx-hook >/dev/null 2>&1 || ls "$tmp"/npm/lib/node_modules/@cx-cli/cx/node_modules/@cx-cli/cx-*/bin/cx-hook >/dev/null 2>&1 ||
  { echo "release-check: the npm package put no cx-hook beside cx" >&2; exit 1; }
ls "$tmp"/npm/lib/node_modules/@cx-cli/cx-*/bin/cx-mcp >/dev/null 2>&1 || ls "$tmp"/npm/lib/node_modules/@cx-cli/cx/node_modules/@cx-cli/cx-*/bin/cx-mcp >/dev/null 2>&1 ||
  { echo "release-check: the npm package put no cx-mcp beside cx" >&2; exit 1; }

if command -v dpkg >/dev/null; then
  # dpkg -i into a root of its own: the package installs as on a system,
  # and this machine's is left alone.
  root="$tmp/dpkg-root"
  mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
  touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
  dpkg --root="$root" --admindir="$root/var/lib/dpkg" --force-script-chrootless --force-not-root --log=/dev/null \
    -i "$dist/cx_${os}_${arch}.deb" >/dev/null
  "$root/usr/bin/cx" ctl version --json | grep -q "\"$version\""
  [ -x "$root/usr/bin/cx-hook" ] || { echo "release-check: the deb put no cx-hook beside cx" >&2; exit 1; }
  [ -x "$root/usr/bin/cx-mcp" ] || { echo "release-check: the deb put no cx-mcp beside cx" >&2; exit 1; }
fi
echo "release-check: cx $version — checksums, archive, installer, formula, npm and deb hold"
