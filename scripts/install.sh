#!/bin/sh
# Installs cx from a release without Go: picks the archive for this machine,
# checks it against the release's checksums.txt, installs cx into a user
# directory, says how to put it on PATH, then runs `cx ctl doctor`.
#
#   curl -fsSL <release base URL>/install.sh | sh
#   sh install.sh [--prefix DIR]        (cx goes to DIR/bin; default ~/.local)
#
# CX_INSTALL_BASE_URL is where the archives and checksums.txt are (a
# release's download URL; tests serve a snapshot from 127.0.0.1). A
# checksum that does not match, an archive with no checksum line, or a
# machine no release is built for is refused with one line, and nothing is
# written. A second run replaces cx in place.
#
# POSIX sh: it runs under dash, busybox sh and macOS's sh alike.
set -eu

base=${CX_INSTALL_BASE_URL:-https://github.com/cx-cli/cx/releases/latest/download}
prefix=${HOME:-}/.local

fail() {
	echo "cx install: $*" >&2
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--prefix) [ $# -ge 2 ] || fail "--prefix needs a directory"; prefix=$2; shift 2 ;;
	--prefix=*) prefix=${1#--prefix=}; shift ;;
	-h | --help) sed -n '2,13p' "$0" 2>/dev/null | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) fail "unknown argument $1 (usage: install.sh [--prefix DIR])" ;;
	esac
done
[ -n "$prefix" ] || fail "no install directory: set HOME or pass --prefix DIR"

# The machine, as the release names it (CX_INSTALL_OS / CX_INSTALL_ARCH
# stand in for uname in tests).
os=${CX_INSTALL_OS:-$(uname -s)}
arch=${CX_INSTALL_ARCH:-$(uname -m)}
case $os in
Linux | linux) os=linux ;;
Darwin | darwin) os=darwin ;;
*) fail "no cx release for $os (there are for Linux and macOS); build from source: go install ./cmd/cx" ;;
esac
case $arch in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) fail "no cx release for $os/$arch (there are for amd64 and arm64); build from source: go install ./cmd/cx" ;;
esac
archive="cx_${os}_${arch}.tar.gz"

fetch() { # url file
	if command -v curl >/dev/null 2>&1; then
		curl -fsL --proto '=https,http' -o "$2" "$1" 2>/dev/null
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1" 2>/dev/null
	else
		fail "neither curl nor wget is installed"
	fi
}

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d' ' -f1
	else
		fail "neither sha256sum nor shasum is installed: the download cannot be checked"
	fi
}

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t cx-install)
trap 'rm -rf "$tmp"' EXIT INT TERM

fetch "$base/checksums.txt" "$tmp/checksums.txt" || fail "cannot download $base/checksums.txt"
want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/checksums.txt")
[ -n "$want" ] || fail "checksums.txt has no line for $archive: refusing to install what cannot be checked"
fetch "$base/$archive" "$tmp/$archive" || fail "cannot download $base/$archive"
got=$(sha256 "$tmp/$archive")
[ "$got" = "$want" ] || fail "$archive does not match its checksum (got $got, want $want): not installed"

mkdir "$tmp/x"
tar -xzf "$tmp/$archive" -C "$tmp/x" || fail "$archive is not a readable archive"
[ -f "$tmp/x/cx" ] || fail "$archive holds no cx"
[ -f "$tmp/x/cx-hook" ] || fail "$archive holds no cx-hook"
[ -f "$tmp/x/cx-mcp" ] || fail "$archive holds no cx-mcp"

bin="$prefix/bin"
if ! mkdir -p "$bin" 2>/dev/null || ! [ -w "$bin" ]; then
	fail "cannot write to $bin: choose another directory with --prefix DIR"
fi
# Copied beside the old one, then renamed over it: a cx running now keeps
# its binary, and an interrupted install leaves the old one whole.
# The hook client and the MCP front first: a cx that finds them beside
# itself installs them.
for f in cx-hook cx-mcp cx; do
	cp "$tmp/x/$f" "$bin/.$f.new.$$" && chmod 755 "$bin/.$f.new.$$" && mv -f "$bin/.$f.new.$$" "$bin/$f" ||
		{ rm -f "$bin/.$f.new.$$"; fail "cannot write $bin/$f"; }
done

echo "cx installed: $bin/cx ($("$bin/cx" ctl version 2>/dev/null | head -n 1))"
case ":${PATH:-}:" in
*":$bin:"*) ;;
*) echo "$bin is not on your PATH: add   export PATH=\"$bin:\$PATH\"   to your shell's profile (~/.profile, ~/.bashrc or ~/.zshrc)" ;;
esac
echo
"$bin/cx" ctl doctor || echo "(cx ctl doctor found something to fix: see above; cx is installed)"
