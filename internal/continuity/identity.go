// Package continuity keeps what the next session should know, as Markdown a
// person can read and edit: one file per project (shared by its git
// worktrees: what works, what failed) and one per worktree (the goal, what is
// open next, the files touched). Each session end merges its evidence in;
// what a person wrote is kept.
package continuity

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"cx/internal/fsutil"
)

// Identity names a project and a worktree.
type Identity struct {
	// Project is what identifies the project across worktrees: the origin
	// remote URL, else the root commit id, else the common git dir; outside
	// git, the absolute directory.
	Project   string
	ProjectID string
	// Worktree is the checkout's root directory (cwd outside git).
	Worktree   string
	WorktreeID string
	// Name is a short human name (the worktree's base name).
	Name string
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// Identify finds the project and worktree of dir, the root commits
// remembered in the store's cache (finding one runs git; a hook should
// not, on every session start).
func (s Store) Identify(dir string) Identity {
	path := filepath.Join(s.Home, "cache", "root-commits.json")
	return identify(dir, func(root string) string {
		roots := map[string]string{}
		if data, err := os.ReadFile(path); err == nil {
			_ = json.Unmarshal(data, &roots)
		}
		if c, ok := roots[root]; ok && c != "" {
			return c
		}
		c := rootCommit(root)
		if c != "" {
			roots[root] = c
			if data, err := json.Marshal(roots); err == nil {
				_ = fsutil.WriteAtomic(path, data, 0o600)
			}
		}
		return c
	})
}

func identify(dir string, rootCommit func(string) string) Identity {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	id := Identity{Project: abs, Worktree: abs}
	root, gitPath := findGit(abs)
	if root != "" {
		id.Worktree = root
		common := commonDir(root, gitPath)
		switch {
		case originURL(common) != "":
			id.Project = "origin:" + originURL(common)
		case rootCommit(root) != "":
			id.Project = "root:" + rootCommit(root)
		default:
			id.Project = "gitdir:" + common
		}
	}
	id.ProjectID, id.WorktreeID = shortHash(id.Project), shortHash(id.Worktree)
	id.Name = filepath.Base(id.Worktree)
	return id
}

// findGit walks up from dir to the directory holding .git.
func findGit(dir string) (root, gitPath string) {
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".git")
		if _, err := os.Stat(p); err == nil {
			return d, p
		}
		if filepath.Dir(d) == d {
			return "", ""
		}
	}
}

// commonDir resolves a worktree's .git (a dir, or a file "gitdir: …" whose
// target has a "commondir") to the repository's common git dir.
func commonDir(root, gitPath string) string {
	fi, err := os.Stat(gitPath)
	if err != nil {
		return gitPath
	}
	if fi.IsDir() {
		return gitPath
	}
	data, err := os.ReadFile(gitPath)
	if err != nil {
		return gitPath
	}
	gd := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(data)), "gitdir:"))
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(root, gd)
	}
	if c, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
		cd := strings.TrimSpace(string(c))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(gd, cd)
		}
		return filepath.Clean(cd)
	}
	return filepath.Clean(gd)
}

// originURL reads [remote "origin"] url from a git config.
func originURL(common string) string {
	f, err := os.Open(filepath.Join(common, "config"))
	if err != nil {
		return ""
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "[") {
			in = l == `[remote "origin"]`
			continue
		}
		if in {
			if k, v, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == "url" {
				return strings.TrimSpace(v)
			}
		}
	}
	return ""
}

// gitTimeout bounds a git call: a hung git (a network filesystem, a lock)
// must not hold a hook.
var gitTimeout = 5 * time.Second

// rootCommit is the repository's first commit (the lexically smallest when
// histories were merged), "" when there is none or git is missing.
func rootCommit(root string) string {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", root, "rev-list", "--max-parents=0", "HEAD")
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	cmd.WaitDelay = time.Second // a child of git holding the pipe cannot hold us
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	lines := strings.Fields(string(out))
	if len(lines) == 0 {
		return ""
	}
	min := lines[0]
	for _, l := range lines[1:] {
		if l < min {
			min = l
		}
	}
	return min
}
