// Resolve finds the Codex binary cx runs: CX_CODEX_BIN or the
// configured path, else the first `codex` on PATH that is not cx itself; an
// npm Node launcher is replaced by the native binary it would start. It also
// learns what the binary supports (version, --no-daemon, its subcommands)
// from `codex --version` and `codex --help`, cached by binary identity.

package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrNotFound means no Codex binary could be found.
var ErrNotFound = errors.New("codex not found")

// ErrNotExecutable means the Codex named is there but cannot be run (a
// shell's 126, where not found is 127).
var ErrNotExecutable = errors.New("codex not executable")

// ErrIsSelf means the configured codex is cx itself.
var ErrIsSelf = errors.New("codex resolves to cx itself")

// Binary is the Codex executable cx runs.
type Binary struct {
	// Path is the executable cx starts: the native binary.
	Path string
	// Found is what was named or found on PATH (an npm launcher, a symlink…).
	Found string
	// Launcher is true when Found is npm's Node launcher and Path the native
	// binary it would run.
	Launcher bool
	// Env holds the variables the launcher would have set (KEY=VALUE).
	Env []string
	// PathPrepend is a directory the launcher would put first on PATH.
	PathPrepend string
}

// Resolve finds the Codex binary. bin is CX_CODEX_BIN or [codex] bin ("" to
// search PATH); pathEnv is $PATH; self is cx's own executable, never chosen.
func Resolve(bin, pathEnv, self string) (Binary, error) {
	selfInfo, _ := os.Stat(self)
	isSelf := func(p string) bool {
		if selfInfo == nil {
			return false
		}
		fi, err := os.Stat(p)
		return err == nil && os.SameFile(fi, selfInfo)
	}
	var found string
	switch {
	case bin != "" && strings.ContainsRune(bin, '/'):
		if !isExecutable(bin) {
			if fi, err := os.Stat(bin); err == nil && !fi.IsDir() {
				return Binary{}, fmt.Errorf("%w: %s is not an executable file", ErrNotExecutable, bin)
			}
			return Binary{}, fmt.Errorf("%w: %s is not an executable file", ErrNotFound, bin)
		}
		if isSelf(bin) {
			return Binary{}, fmt.Errorf("%w: %s", ErrIsSelf, bin)
		}
		found = bin
	default:
		name := "codex"
		if bin != "" {
			name = bin
		}
		self := false // cx itself was found as the name (alias, symlink)
		for _, dir := range filepath.SplitList(pathEnv) {
			if dir == "" {
				dir = "."
			}
			p := filepath.Join(dir, name)
			if !isExecutable(p) {
				continue
			}
			if isSelf(p) {
				self = true
				continue
			}
			found = p
			break
		}
		switch {
		case found == "" && self:
			return Binary{}, fmt.Errorf("%w: no %q on PATH other than cx itself (install Codex: npm install -g @openai/codex; or set CX_CODEX_BIN or [codex] bin)", ErrNotFound, name)
		case found == "":
			return Binary{}, fmt.Errorf("%w: no %q on PATH (install Codex: npm install -g @openai/codex; or set CX_CODEX_BIN or [codex] bin)", ErrNotFound, name)
		}
	}
	if abs, err := filepath.Abs(found); err == nil {
		found = abs
	}
	b := Binary{Path: found, Found: found}
	if isNodeScript(found) {
		nb, err := nativeOfLauncher(found)
		if err != nil {
			return Binary{}, err
		}
		nb.Found = found
		return nb, nil
	}
	return b, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// isNodeScript reports whether p starts with a #! line naming node.
func isNodeScript(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 128)
	n, _ := f.Read(head)
	head = head[:n]
	if !bytes.HasPrefix(head, []byte("#!")) {
		return false
	}
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	return bytes.Contains(head, []byte("node"))
}

// targetTriple is the vendor folder name npm's launcher uses for this machine.
func targetTriple() (triple, pkg string) {
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64":
		return "x86_64-unknown-linux-musl", "codex-linux-x64"
	case "linux/arm64":
		return "aarch64-unknown-linux-musl", "codex-linux-arm64"
	case "darwin/amd64":
		return "x86_64-apple-darwin", "codex-darwin-x64"
	case "darwin/arm64":
		return "aarch64-apple-darwin", "codex-darwin-arm64"
	}
	return "", ""
}

// nativeOfLauncher resolves npm's `codex` launcher (bin/codex.js of the
// @openai/codex package) to the native binary it starts, the way the
// launcher does: the platform package found by Node's module lookup from the
// package, else the package's own vendor folder.
func nativeOfLauncher(launcher string) (Binary, error) {
	script, err := filepath.EvalSymlinks(launcher)
	if err != nil {
		return Binary{}, fmt.Errorf("resolve codex launcher %s: %w", launcher, err)
	}
	pkgRoot := filepath.Dir(filepath.Dir(script))
	var meta struct {
		Name string `json:"name"`
	}
	if data, err := os.ReadFile(filepath.Join(pkgRoot, "package.json")); err == nil {
		_ = json.Unmarshal(data, &meta)
	}
	if meta.Name != "@openai/codex" {
		return Binary{}, fmt.Errorf("%w: %s is a Node script but not the @openai/codex launcher", ErrNotFound, launcher)
	}
	triple, platformPkg := targetTriple()
	if triple == "" {
		return Binary{}, fmt.Errorf("%w: no native Codex for %s/%s", ErrNotFound, runtime.GOOS, runtime.GOARCH)
	}
	var vendors []string
	// Node's lookup: node_modules folders from the script's folder upwards.
	for dir := filepath.Dir(script); ; dir = filepath.Dir(dir) {
		if filepath.Base(dir) != "node_modules" {
			vendors = append(vendors, filepath.Join(dir, "node_modules", "@openai", platformPkg, "vendor"))
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	vendors = append(vendors, filepath.Join(pkgRoot, "vendor"))
	for _, v := range vendors {
		arch := filepath.Join(v, triple)
		if b, ok := nativeIn(arch, pkgRoot); ok {
			b.Launcher = true
			return b, nil
		}
	}
	return Binary{}, fmt.Errorf("%w: launcher %s has no native binary for %s (reinstall @openai/codex)", ErrNotFound, launcher, triple)
}

// nativeIn finds the binary in one vendor/<triple> folder. Newer packages
// describe their layout in codex-package.json; older ones use codex/codex
// with helper tools in path/.
func nativeIn(arch, pkgRoot string) (Binary, bool) {
	if data, err := os.ReadFile(filepath.Join(arch, "codex-package.json")); err == nil {
		var layout struct {
			Entrypoint string `json:"entrypoint"`
		}
		if json.Unmarshal(data, &layout) == nil && layout.Entrypoint != "" {
			p := filepath.Join(arch, filepath.FromSlash(layout.Entrypoint))
			if isExecutable(p) {
				return Binary{Path: p, Env: []string{
					"CODEX_MANAGED_PACKAGE_ROOT=" + pkgRoot,
					"CODEX_MANAGED_BY_NPM=1",
				}}, true
			}
		}
	}
	for _, rel := range []string{"codex/codex", "bin/codex"} {
		p := filepath.Join(arch, rel)
		if !isExecutable(p) {
			continue
		}
		b := Binary{Path: p, Env: []string{"CODEX_MANAGED_BY_NPM=1"}}
		if fi, err := os.Stat(filepath.Join(arch, "path")); err == nil && fi.IsDir() {
			b.PathPrepend = filepath.Join(arch, "path")
		}
		return b, true
	}
	return Binary{}, false
}
