package codex

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The on-disk layout as Codex 0.128 and 0.169 write it.
func TestLayout(t *testing.T) {
	home := t.TempDir()
	day := time.Now()
	dayDir := filepath.Join(home, "sessions", day.Format("2006"), day.Format("01"), day.Format("02"))
	os.MkdirAll(dayDir, 0o700)
	os.MkdirAll(archivedDir(home), 0o700)
	live := filepath.Join(dayDir, "rollout-2026-11-22T10-00-00-019a-live.jsonl")
	archived := filepath.Join(archivedDir(home), "rollout-2026-11-20T09-00-00-019a-old.jsonl")
	os.WriteFile(live, nil, 0o600)
	os.WriteFile(archived, nil, 0o600)
	os.WriteFile(filepath.Join(dayDir, "notes.txt"), nil, 0o600)
	if id := RolloutID(live); id != "019a-live" {
		t.Fatalf("RolloutID = %q", id)
	}
	if id := RolloutID("/x/rollout.jsonl"); id != "" {
		t.Fatalf("RolloutID of a non-rollout = %q", id)
	}
	oldDir := filepath.Join(home, "sessions", "2020", "01", "02")
	os.MkdirAll(oldDir, 0o700)
	ancient := filepath.Join(oldDir, "rollout-2020-01-02T10-00-00-019a-ancient.jsonl")
	os.WriteFile(ancient, nil, 0o600)
	os.Chtimes(ancient, time.Date(2020, 1, 2, 10, 0, 0, 0, time.UTC), time.Date(2020, 1, 2, 10, 0, 0, 0, time.UTC))
	got := RolloutsSince(home, day.Add(-time.Hour))
	if len(got) != 2 || got["019a-live"] != live || got["019a-old"] != archived {
		t.Fatalf("RolloutsSince = %v", got)
	}
	// A zero since lists the whole history (cx ctl import).
	if got := RolloutsSince(home, time.Time{}); len(got) != 3 || got["019a-ancient"] != ancient {
		t.Fatalf("RolloutsSince(zero) = %v", got)
	}
	// A recorded path whose file moved to archived_sessions is found there.
	moved := filepath.Join(dayDir, filepath.Base(archived))
	if p := FindRollout(home, "019a-old", moved); p != archived {
		t.Fatalf("FindRollout (moved) = %q", p)
	}
	if p := FindRollout(home, "019a-live", ""); p != live {
		t.Fatalf("FindRollout (by id) = %q", p)
	}
	if p := FindRollout(home, "none", ""); p != "" {
		t.Fatalf("FindRollout (none) = %q", p)
	}
	os.MkdirAll(filepath.Join(home, threadLocksDir), 0o700)
	os.WriteFile(filepath.Join(home, threadLocksDir, "019a-live.lock"), nil, 0o600)
	os.WriteFile(filepath.Join(home, threadLocksDir, ".coordination.lock"), nil, 0o600) // Codex's own, not a thread
	if l := ThreadLocks(home); !l["019a-live"] || len(l) != 1 {
		t.Fatalf("ThreadLocks = %v", l)
	}
	if id, ok := LockFileThread(filepath.Join(home, threadLocksDir, ".coordination.lock")); ok {
		t.Fatalf("LockFileThread(.coordination.lock) = %q, a thread", id)
	}
	if id, ok := LockFileThread(filepath.Join(home, threadLocksDir, "019a-live.lock")); !ok || id != "019a-live" {
		t.Fatalf("LockFileThread = %q %v", id, ok)
	}
	if ThreadLocked(home, "019a-live") {
		t.Fatal("an unlocked lock file reported locked")
	}
}

// Compressed rollouts (local_thread_store_compression) are rollouts: listed
// and found like plain ones, a thread once when both siblings exist (the
// plain one, which a resume is writing), a recorded plain path found as its
// compressed self after Codex compressed it.
func TestCompressedLayout(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "sessions", "2026", "11", "10")
	os.MkdirAll(dir, 0o700)
	os.MkdirAll(archivedDir(home), 0o700)
	cold := filepath.Join(dir, "rollout-2026-11-10T10-00-00-019a-cold.jsonl.zst")
	both := filepath.Join(dir, "rollout-2026-11-10T11-00-00-019a-both.jsonl")
	archived := filepath.Join(archivedDir(home), "rollout-2026-11-09T09-00-00-019a-arch.jsonl.zst")
	for _, p := range []string{cold, both + ".zst", both, archived} {
		os.WriteFile(p, nil, 0o600)
	}
	if id := RolloutID(cold); id != "019a-cold" {
		t.Fatalf("RolloutID(.jsonl.zst) = %q", id)
	}
	got := RolloutsSince(home, time.Time{})
	if len(got) != 3 || got["019a-cold"] != cold || got["019a-both"] != both || got["019a-arch"] != archived {
		t.Fatalf("RolloutsSince = %v", got)
	}
	if p := FindRollout(home, "019a-cold", strings.TrimSuffix(cold, ".zst")); p != cold {
		t.Fatalf("FindRollout (recorded plain, now compressed) = %q", p)
	}
	if p := FindRollout(home, "019a-both", ""); p != both {
		t.Fatalf("FindRollout (both siblings) = %q, want the plain one", p)
	}
	if p := FindRollout(home, "019a-arch", filepath.Join(dir, "rollout-2026-11-09T09-00-00-019a-arch.jsonl")); p != archived {
		t.Fatalf("FindRollout (archived and compressed) = %q", p)
	}
}

// The trust key of a SessionStart handler, as 0.169's hooks/list names it.
func TestTrustKeys(t *testing.T) {
	key := "/h/.codex/hooks.json:session_start:0:0"
	if p := trustKeyPrefix("/h/.codex/hooks.json", "SessionStart"); !strings.HasPrefix(key, p) || p != "/h/.codex/hooks.json:session_start:" {
		t.Fatalf("prefix %q", p)
	}
	if p := trustKeyPrefix("/h/hooks.json", "UserPromptSubmit"); p != "/h/hooks.json:user_prompt_submit:" {
		t.Fatalf("prefix %q", p)
	}
	if h := TrustStateHeader(key); h != `[hooks.state."/h/.codex/hooks.json:session_start:0:0"]` {
		t.Fatalf("header %q", h)
	}
	cfg := "[hooks.state.\"" + key + "\"]\ntrusted_hash = \"sha256:1\"\n"
	if !TrustRecorded(cfg, "/h/.codex/hooks.json", "SessionStart") || TrustRecorded(cfg, "/h/.codex/hooks.json", "Stop") {
		t.Fatal("TrustRecorded")
	}
	if EventName("sessionStart") != "SessionStart" || EventName("") != "" {
		t.Fatal("EventName")
	}
}

// One environment for every Codex process cx starts: the launcher's PATH
// addition and variables kept, cx's set last, unset keys gone.
func TestEnv(t *testing.T) {
	bin := Binary{Env: []string{"CODEX_MANAGED_BY_NPM=1"}, PathPrepend: "/npm/bin"}
	base := []string{"PATH=/usr/bin", "CODEX_HOME=/old", "CX_HOOKS_OFF=1", "KEEP=1", "CODEX_MANAGED_BY_NPM=0"}
	got := strings.Join(Env(base, bin, []string{HomeEnv("/new")}, "CX_HOOKS_OFF"), " ")
	if got != "PATH=/npm/bin:/usr/bin KEEP=1 CODEX_MANAGED_BY_NPM=1 CODEX_HOME=/new" {
		t.Fatalf("Env = %s", got)
	}
	getenv := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if h := Home(getenv(map[string]string{"HOME": "/u"})); h != "/u/.codex" {
		t.Fatalf("Home = %q", h)
	}
	if h := Home(getenv(map[string]string{"CODEX_HOME": "rel", "HOME": "/u"})); !filepath.IsAbs(h) || filepath.Base(h) != "rel" {
		t.Fatalf("Home (relative CODEX_HOME) = %q, want it absolute", h)
	}
}

// The developer instructions cx hands Codex when hooks cannot: the user's
// -c replaced in place, else config.toml's merged and a -c put first.
func TestDeveloperInstructions(t *testing.T) {
	home := t.TempDir()
	args := []string{"exec", "-c", `developer_instructions="be brief"`, "hi"}
	v, at := UserDeveloperInstructions(args, home)
	if v != "be brief" || at != 2 {
		t.Fatalf("from -c: %q %d", v, at)
	}
	if out := WithDeveloperInstructions(args, at, "be brief\n\nctx \"q\""); out[2] != `developer_instructions="be brief\n\nctx \"q\""` || len(out) != 4 {
		t.Fatalf("replaced: %q", out)
	}
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("developer_instructions = \"from config\"\n"), 0o600)
	if v, at := UserDeveloperInstructions([]string{"exec", "--", "-c", "developer_instructions=x"}, home); v != "from config" || at != -1 {
		t.Fatalf("from config.toml: %q %d", v, at)
	}
	if out := WithDeveloperInstructions([]string{"exec"}, -1, "ctx"); strings.Join(out, " ") != `-c developer_instructions="ctx" exec` {
		t.Fatalf("prepended: %q", out)
	}
}

// watchFresh watches a fresh home (skipping where the system gives no
// watch); wake waits, up to 5 s, for the wake-up after do.
func watchFresh(t *testing.T, locksOnly bool) (w *ThreadWatch, home string, wake func(what string, do func())) {
	t.Helper()
	home = t.TempDir()
	if w = WatchThreads(home, locksOnly); w == nil {
		t.Skip("no inotify here")
	}
	t.Cleanup(w.Close)
	return w, home, func(what string, do func()) {
		t.Helper()
		do()
		select {
		case <-w.C:
		case <-time.After(5 * time.Second):
			t.Fatalf("no wake-up for %s", what)
		}
	}
}

// A thread's lock file, or a rollout in today's folder, wakes the watch.
func TestThreadWatch(t *testing.T) {
	w, home, wake := watchFresh(t, false)
	locks := filepath.Join(home, threadLocksDir)
	os.MkdirAll(locks, 0o700)
	w.Refresh()
	wake("a new lock file", func() { os.WriteFile(filepath.Join(locks, "019a-new.lock"), nil, 0o600) })
	w.Close()
	w.Close() // twice is fine
}

// In a fresh home the watch watches home, so the sessions folder's
// creation wakes it; once that folder exists it leaves home, whose
// databases Codex writes all the time.
func TestThreadWatchLeavesHome(t *testing.T) {
	w, home, wake := watchFresh(t, false)
	if !slices.Contains(w.w.WatchList(), home) {
		t.Fatalf("a fresh home is not watched: %v", w.w.WatchList())
	}
	wake("the sessions folder", func() { os.MkdirAll(filepath.Join(home, "sessions"), 0o700) })
	w.Refresh()
	if list := w.w.WatchList(); slices.Contains(list, home) || !slices.Contains(list, filepath.Join(home, "sessions")) {
		t.Fatalf("watching %v once sessions exists", list)
	}
}

// A burst of creations (many Codexes' files at once) is one wake-up,
// settle after its first.
func TestThreadWatchSettlesABurst(t *testing.T) {
	w, home, wake := watchFresh(t, false)
	locks := filepath.Join(home, threadLocksDir)
	// The folder's own creation is an event in home: its wake-up is
	// taken first, or its timer, started before the burst, would be
	// counted as the burst's.
	wake("the locks folder", func() { os.MkdirAll(locks, 0o700) })
	w.Refresh()
	start := time.Now()
	wake("a burst of lock files", func() {
		for i := range 20 {
			os.WriteFile(filepath.Join(locks, fmt.Sprintf("019a-%02d.lock", i)), nil, 0o600)
		}
	})
	if d := time.Since(start); d < settle {
		t.Fatalf("woken %v after the burst began, before it settled (%v)", d, settle)
	}
	select {
	case <-w.C:
		t.Fatal("a second wake-up for the same burst")
	case <-time.After(2 * settle):
	}
}

// What the watch is told is a creation, not the writes that follow it: a
// live rollout, written at every event in the folder watched, costs every
// cx watching that folder nothing.
func TestCreationsOnly(t *testing.T) {
	dir := t.TempDir()
	c, err := newCreations()
	if err != nil {
		t.Skip("no watch here:", err)
	}
	defer c.Close()
	if err := c.Add(dir); err != nil {
		t.Fatal(err)
	}
	next := func(d time.Duration) (string, bool) {
		select {
		case name := <-c.created:
			return name, true
		case <-time.After(d):
			return "", false
		}
	}
	p := filepath.Join(dir, "rollout-2026-01-01T00-00-00-019a.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if name, ok := next(5 * time.Second); !ok || name != p {
		t.Fatalf("creation: got %q (%v), want %s", name, ok, p)
	}
	for range 200 {
		f.WriteString("{\"type\":\"event_msg\"}\n")
	}
	f.Sync()
	os.Chmod(p, 0o600)
	if name, ok := next(300 * time.Millisecond); ok {
		t.Fatalf("told of %s after its creation: writes reach the watch", name)
	}
	if err := c.Remove(dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "after"), nil, 0o600)
	if name, ok := next(300 * time.Millisecond); ok {
		t.Fatalf("told of %s in a folder no longer watched", name)
	}
}

// A Codex that keeps writer locks is watched by its locks folder alone
// (and home until that folder exists): the lines its rollouts take wake
// nothing; a new lock does.
func TestThreadWatchLocksOnly(t *testing.T) {
	w, home, wake := watchFresh(t, true)
	locks := filepath.Join(home, threadLocksDir)
	day := filepath.Join(home, "sessions", time.Now().Format("2006/01/02"))
	os.MkdirAll(day, 0o700)
	wake("the locks folder", func() { os.MkdirAll(locks, 0o700) })
	w.Refresh()
	if list := w.w.WatchList(); !slices.Equal(list, []string{locks}) {
		t.Fatalf("watching %v, want the locks folder alone", list)
	}
	os.WriteFile(filepath.Join(day, "rollout-2026-01-01T00-00-00-019a.jsonl"), []byte("{}\n"), 0o600)
	select {
	case <-w.C:
		t.Fatal("a rollout woke a watch of the locks alone")
	case <-time.After(2 * settle):
	}
	wake("a new lock file", func() { os.WriteFile(filepath.Join(locks, "019a-new.lock"), nil, 0o600) })
}
