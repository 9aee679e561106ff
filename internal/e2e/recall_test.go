package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cx/internal/codextest"
)

// Per-prompt recall on real Codex: a later session's question about what
// an earlier one did reaches the model with the earlier turn beside it —
// after the prompt, in a cx:recall block — once; a trivial prompt gets
// nothing; and what was recalled is not archived again as the later
// session's own words.
func TestPerPromptRecall(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		first := "The quokkaberry deploy failed: the zebrafinch cache was stale, so clear it [[shell: echo cache-cleared]]"
		if _, errOut, code := h.Exec("", "exec", first); code != 0 {
			t.Fatalf("first session: exit %d: %s", code, errOut)
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

// Forget reaches every table and file: after `cx exec "<prompt>"` and
// `cx ctl forget <that session> --yes`, no byte of the prompt is anywhere
// under CX_HOME — the database, its WAL, logs — not even in the run row
// that records what cx was started with.
func TestForgetLeavesNoWord(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		word := "narwhalquixotic"
		if _, errOut, code := h.Exec("", "exec", "remember the "+word+" deadline, please"); code != 0 {
			t.Fatalf("exec: %s", errOut)
		}
		ids := h.RolloutSessionIDs()
		if len(ids) != 1 {
			t.Fatalf("sessions: %v", ids)
		}
		if out := h.CXCtl("ctl", "search", "--all", "--json", word); !strings.Contains(out, ids[0]) {
			t.Fatalf("the prompt was never archived (the test would prove nothing):\n%s", out)
		}
		h.CXCtl("ctl", "forget", ids[0], "--yes")
		_ = filepath.WalkDir(h.CXHome, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(word)) {
				t.Errorf("%q is still in %s after forget", word, p)
			}
			return nil
		})
	})
}
