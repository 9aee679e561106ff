package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// Per-prompt recall on real Codex: a later session's question about what
// an earlier one did reaches the model with the earlier turn beside it —
// after the prompt, in a cx:recall block — once; a trivial prompt gets
// nothing; and what was recalled is not archived again as the later
// session's own words.
func TestPerPromptRecall(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		// The answering turn is neither the goal (the task that opened the
		// line) nor the checkpoint's task (the last that did work): those
		// the start block gives, and recall gives no turn twice.
		for i, p := range []string{
			"Set up the quokkaberry deploy [[shell: echo setup]]",
			"The quokkaberry deploy failed: the zebrafinch cache was stale, so clear it [[shell: echo cache-cleared]]",
			"Now tag the quokkaberry release [[shell: echo tagged]]",
		} {
			args := []string{"exec", p}
			if i > 0 {
				args = []string{"exec", "resume", h.RolloutSessionIDs()[0], p}
			}
			if _, errOut, code := h.Exec("", args...); code != 0 {
				t.Fatalf("first session, turn %d: exit %d: %s", i+1, code, errOut)
			}
		}
		ask := "Why did the quokkaberry deploy fail last time?"
		if _, errOut, code := h.Exec("", "exec", ask); code != 0 {
			t.Fatalf("second session: exit %d: %s", code, errOut)
		}
		text := inputText(requestFor(t, h, ask))
		i, j := strings.Index(text, ask), strings.Index(text, `source="cx:recall"`)
		if j < 0 || !strings.Contains(text[j:], "zebrafinch cache was stale") {
			t.Fatalf("the question reached the model without the turn that answers it:\n%s", cxBlocks(text))
		}
		if i < 0 || j < i {
			t.Errorf("the recall block comes before the prompt (at %d, prompt at %d)", j, i)
		}
		if n := strings.Count(text, `source="cx:recall"`); n != 1 {
			t.Errorf("%d recall blocks in one request", n)
		}
		if _, _, code := h.Exec("", "exec", "ok thanks"); code != 0 {
			t.Fatal("third session failed")
		}
		if text := inputText(requestFor(t, h, "ok thanks")); strings.Contains(text, "cx:recall") {
			t.Errorf("a trivial prompt was given recall:\n%s", cxBlocks(text))
		}
		// The second session's archive holds its own question, not the
		// recalled turn (capture drops injected context).
		out := h.CXCtl("ctl", "search", "--all", "--json", "zebrafinch")
		if strings.Count(out, `"session"`) != 1 {
			t.Errorf("the recalled words were archived again as another session's:\n%s", out)
		}
	})
}

// Forget reaches every table and file: after a session — `cx exec
// "<prompt>"`, and one typed into the TUI — and `cx ctl forget <that
// session> --yes`, no byte of its prompt is anywhere under CX_HOME — the
// database, its WAL, logs, continuity files — not even in the run row that
// records what cx was started with.
func TestForgetLeavesNoWord(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		word := "narwhalquixotic"
		if _, errOut, code := h.Exec("", "exec", "remember the "+word+" deadline, please"); code != 0 {
			t.Fatalf("exec: %s", errOut)
		}
		tuiWord := "tapirvermilion"
		tu := h.StartTUI()
		tu.WaitReady()
		tu.Prompt("note the "+tuiWord+" plan", "mock reply: note the "+tuiWord+" plan")
		tu.Slash("/exit")
		if code := tu.WaitExit(30 * time.Second); code != 0 {
			t.Fatalf("cx exit %d; screen:\n%s", code, tu.Screen())
		}
		ids := h.RolloutSessionIDs()
		if len(ids) != 2 {
			t.Fatalf("sessions: %v", ids)
		}
		for _, w := range []string{word, tuiWord} {
			out := h.CXCtl("ctl", "search", "--all", "--json", w)
			if !strings.Contains(out, `"session"`) {
				t.Fatalf("%q was never archived (the test would prove nothing):\n%s", w, out)
			}
		}
		for _, id := range ids {
			h.CXCtl("ctl", "forget", id, "--yes")
		}
		_ = filepath.WalkDir(h.CXHome, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, w := range []string{word, tuiWord} {
				if bytes.Contains(b, []byte(w)) {
					t.Errorf("%q is still in %s after forget", w, p)
				}
			}
			return nil
		})
	})
}

// Forgetting one session takes everything derived from it out of every
// continuity document and every stored copy of one, while another session
// it was merged beside stays (issue: forget left the note of a session the
// next session's archive had kept): its note, goal, plan steps, command and
// file are in no byte under CX_HOME.
func TestForgetLeavesNoNote(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		note, goal, step, file, cmd := "okapizest", "Catalogue the marmosetquill", "prepare the ibexwhorl shelf", "notes/gnulattice.md", "echo wombatfizz"
		exec := func(prompt string) {
			t.Helper()
			if _, errOut, code := h.Exec("", "exec", prompt); code != 0 {
				t.Fatalf("exec %q: %s", prompt, errOut)
			}
		}
		exec(goal + " [[plan: " + step + "]] [[shell: " + cmd + "]] [[patch]]*** Begin Patch\n*** Add File: " + file + "\n+x\n*** End Patch[[/patch]]")
		first := h.RolloutSessionIDs()
		exec("remember " + note + " please")
		exec("Second session, kept [[shell: echo keptsession]]")
		ids := h.RolloutSessionIDs()
		if len(first) != 1 || len(ids) != 3 {
			t.Fatalf("sessions %v then %v", first, ids)
		}
		noteID := ""
		for _, id := range ids {
			if id != first[0] && strings.Contains(h.CXCtl("ctl", "show", id), note) {
				noteID = id
			}
		}
		words := []string{note, goal, step, "gnulattice", "wombatfizz"}
		grep := func(w string) []string {
			var in []string
			_ = filepath.WalkDir(h.CXHome, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(w)) {
						in = append(in, p)
					}
				}
				return nil
			})
			return in
		}
		for _, w := range words {
			if len(grep(w)) == 0 {
				t.Fatalf("%q is nowhere before forget (the test would prove nothing)", w)
			}
		}
		h.CXCtl("ctl", "forget", first[0], "--yes")
		h.CXCtl("ctl", "forget", noteID, "--yes")
		for _, w := range words {
			if in := grep(w); len(in) > 0 {
				t.Errorf("%q is still in %v after forget", w, in)
			}
		}
		if ctx := h.CXCtl("ctl", "context"); !strings.Contains(ctx, "echo keptsession") {
			t.Errorf("the session not forgotten lost its command:\n%s", ctx)
		}
	})
}

// Codex's own compression of cold rollouts (0.169's
// local_thread_store_compression, at startup): a session's rollout set
// eight days back is compressed by the next Codex started with the feature
// on, and cx reads it whole — imported into a fresh CX_HOME with the rest,
// found by search, shown — as it read the plain one.
func TestCompressedRolloutsFromCodex(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		if in.Version == "0.128.0" {
			t.Skip("0.128 has no local_thread_store_compression")
		}
		h := New(t, in, Options{})
		if _, errOut, code := h.Exec("", "exec", "the wombatquill release notes need a changelog"); code != 0 {
			t.Fatalf("first session: %s", errOut)
		}
		first := h.Rollouts()
		if len(first) != 1 {
			t.Fatalf("rollouts: %v", first)
		}
		old := time.Now().Add(-8 * 24 * time.Hour)
		if err := os.Chtimes(first[0], old, old); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := h.Exec("", "exec", "-c", "features.local_thread_store_compression=true", "a second session"); code != 0 {
			t.Fatalf("second session: %s", errOut)
		}
		var compressed string
		deadline := time.Now().Add(20 * time.Second)
		for compressed == "" && time.Now().Before(deadline) {
			if _, err := os.Stat(first[0] + ".zst"); err == nil {
				if _, err := os.Stat(first[0]); os.IsNotExist(err) {
					compressed = first[0] + ".zst"
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		if compressed == "" {
			t.Fatalf("Codex %s did not compress a rollout eight days old (%s): the test would prove nothing", in.Version, first[0])
		}
		// A fresh CX_HOME imports every session, the compressed one too.
		h.CXHome = filepath.Join(h.Root, "cx-fresh")
		out := h.CXCtl("ctl", "import", "--json")
		if !strings.Contains(out, `"imported": 2`) {
			t.Fatalf("import into a fresh CX_HOME:\n%s", out)
		}
		id := rolloutID(strings.TrimSuffix(compressed, ".zst"))
		if out := h.CXCtl("ctl", "search", "--all", "--json", "which release notes need a changelog?"); !strings.Contains(out, id) {
			t.Fatalf("search does not find the compressed session %s:\n%s", id, out)
		}
		if out := h.CXCtl("ctl", "show", id, "--turn", "1"); !strings.Contains(out, "wombatquill") {
			t.Fatalf("show of the compressed session:\n%s", out)
		}
		if out := h.CXCtl("ctl", "checkpoint", compressed, "--json"); !strings.Contains(out, "wombatquill") {
			t.Fatalf("checkpoint of the compressed rollout:\n%s", out)
		}
	})
}
