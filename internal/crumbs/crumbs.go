// Package crumbs keeps the breadcrumbs of runs and hooks that could not
// write the ledger (a full disk, an I/O error, a damaged or locked ledger):
// empty files under CX_HOME/unrecorded naming the Codex home and the
// threads to recover, which the next start or sweep that can write the
// ledger records from their rollouts (lifecycle) and doctor reports.
package crumbs

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// unrecordedDir holds the breadcrumbs of runs (and hooks) that could not
// write the ledger: empty files — an inode, no data, so they land on a
// full disk too. A breadcrumb is <start unix nanos>-<base64url of the Codex
// home>.<kind> (kind "run": left by a run after its Codex exited; "hook":
// by a hook, whose Codex may still run), and each thread it names is a
// file <start unix nanos>.<thread id> beside it: only those threads are
// recovered into this CX_HOME's ledger — a Codex home may serve runs of
// other CX_HOMEs and Codex started without cx, whose sessions are not
// this ledger's.
const unrecordedDir = "unrecorded"

// Kinds of breadcrumb.
const (
	Run  = "run"
	Hook = "hook"
)

// Mark leaves the breadcrumb that a run or hook which started at
// started on codexHome could not record the threads named; the next start
// or sweep that can write the ledger recovers them from their rollouts.
func Mark(home, codexHome, kind string, started time.Time, threads []string) error {
	dir := filepath.Join(home, unrecordedDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ns := strconv.FormatInt(started.UnixNano(), 10)
	var first error
	touch := func(name string) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			err = f.Close()
		}
		if first == nil {
			first = err
		}
	}
	// Threads first: a crumb seen is a crumb complete.
	for _, id := range threads {
		if validThreadID(id) {
			touch(ns + "." + id)
		}
	}
	touch(ns + "-" + base64.RawURLEncoding.EncodeToString([]byte(codexHome)) + "." + kind)
	return first
}

// validThreadID keeps a thread id a plain file name.
func validThreadID(id string) bool {
	return id != "" && !strings.ContainsAny(id, "/.\\\x00") && len(id) <= 128
}

// Crumb is one run or hook that could not write the ledger.
type Crumb struct {
	path      string
	Started   time.Time
	CodexHome string
	Kind      string   // "run" or "hook"
	Threads   []string // the threads it could not record
	files     []string // the thread files
}

// List lists the breadcrumbs of runs and hooks that could not write
// the ledger, oldest first.
func List(home string) []Crumb {
	dir := filepath.Join(home, unrecordedDir)
	entries, _ := os.ReadDir(dir)
	threads := map[string][]string{} // start nanos → thread ids
	var out []Crumb
	for _, e := range entries {
		if ns, id, ok := strings.Cut(e.Name(), "."); ok && !strings.Contains(ns, "-") {
			threads[ns] = append(threads[ns], id)
			continue
		}
		ns, rest, ok := strings.Cut(e.Name(), "-")
		enc, kind, _ := strings.Cut(rest, ".")
		n, err := strconv.ParseInt(ns, 10, 64)
		ch, err2 := base64.RawURLEncoding.DecodeString(enc)
		if !ok || err != nil || err2 != nil || (kind != Run && kind != Hook) {
			continue
		}
		out = append(out, Crumb{path: filepath.Join(dir, e.Name()), Started: time.Unix(0, n), CodexHome: string(ch), Kind: kind})
	}
	for i := range out {
		ns := strconv.FormatInt(out[i].Started.UnixNano(), 10)
		ids := threads[ns]
		sort.Strings(ids)
		out[i].Threads = ids
		for _, id := range ids {
			out[i].files = append(out[i].files, filepath.Join(dir, ns+"."+id))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// Remove removes the breadcrumb and its thread files: its threads are
// recorded.
func (c Crumb) Remove() {
	for _, f := range c.files {
		_ = os.Remove(f)
	}
	_ = os.Remove(c.path)
}
