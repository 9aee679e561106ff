package e2e

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"cx/internal/codextest"
	"cx/internal/mockmodel"
)

// inputText is every text a request carries in its input items.
func inputText(r mockmodel.Request) string {
	var b strings.Builder
	for _, it := range r.Inputs() {
		switch c := it["content"].(type) {
		case string:
			b.WriteString(c + "\n")
		case []any:
			for _, p := range c {
				if m, ok := p.(map[string]any); ok {
					if s, ok := m["text"].(string); ok {
						b.WriteString(s + "\n")
					}
				}
			}
		}
	}
	if s, ok := r.JSON["instructions"].(string); ok {
		b.WriteString(s)
	}
	return b.String()
}

var sectionsAttr = regexp.MustCompile(`<cx-context source="[^"]*" sections="([^"]*)"`)

// sectionCounts counts each injected section hash in a request.
func sectionCounts(r mockmodel.Request) map[string]int {
	out := map[string]int{}
	for _, m := range sectionsAttr.FindAllStringSubmatch(inputText(r), -1) {
		for _, h := range strings.Split(m[1], ",") {
			out[h]++
		}
	}
	return out
}

// requestFor finds the last request whose prompt is s (not Codex's own
// side requests, such as 0.169's title generation, which quote it).
func requestFor(t *testing.T, h *H, s string) mockmodel.Request {
	t.Helper()
	reqs := h.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.TrimSpace(reqs[i].LastUserText()) == s {
			return reqs[i]
		}
	}
	t.Fatalf("no request for %q", s)
	return mockmodel.Request{}
}

// The block reaches the model exactly once at start, again after /compact,
// and a resume adds no section the history already holds.
func TestInjection(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		// A first session leaves continuity and a checkpoint behind.
		tu := h.StartTUI()
		tu.WaitReady()
		tu.Prompt("build the widget parser [[shell: echo parser-ok]]", "mock: done (1 steps)")
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)

		tu = h.StartTUI()
		tu.WaitReady()
		tu.Prompt("second session starts", "mock reply: second session starts")
		first := requestFor(t, h, "second session starts")
		counts := sectionCounts(first)
		if len(counts) == 0 || !strings.Contains(inputText(first), "build the widget parser") {
			t.Fatalf("no cx context in the first request:\n%s", inputText(first))
		}
		for s, n := range counts {
			if n != 1 {
				t.Fatalf("section %s injected %d times at start", s, n)
			}
		}
		if !strings.Contains(inputText(first), "echo parser-ok") {
			t.Fatalf("the previous session's command is not in the context:\n%s", inputText(first))
		}
		tu.Type("/compact")
		time.Sleep(2 * time.Second)
		tu.WaitReady()
		tu.Prompt("after compaction", "mock reply: after compaction")
		after := requestFor(t, h, "after compaction")
		if !strings.Contains(inputText(after), "Checkpoint of this session") {
			t.Fatalf("no fresh checkpoint after /compact:\n%s", inputText(after))
		}
		for s, n := range sectionCounts(after) {
			if n != 1 {
				t.Fatalf("section %s present %d times after compaction", s, n)
			}
		}
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)

		ids := h.RolloutSessionIDs()
		second := ids[len(ids)-1]
		tu = h.StartTUI("resume", second)
		tu.WaitText("after compaction", 60*time.Second)
		tu.WaitReady()
		tu.Prompt("resumed and continuing", "mock reply: resumed and continuing")
		resumed := requestFor(t, h, "resumed and continuing")
		for s, n := range sectionCounts(resumed) {
			if n != 1 {
				t.Fatalf("after resume section %s is in the history %d times", s, n)
			}
		}
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)
		committedOnce(t, h)
	})
}

// Without cx's hooks (not installed), cx still learns and commits sessions
// from the Codex process, and gives the next session its context through
// -c developer_instructions.
func TestInjectionFallback(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{NoHooks: true})
		tu := h.StartTUI()
		tu.WaitReady()
		tu.Prompt("port the lexer to go [[shell: echo lexer-ported]]", "mock: done (1 steps)")
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)
		committedOnce(t, h)

		out, errOut, code := h.Exec("", "exec", "what next")
		if code != 0 || !strings.Contains(errOut, "developer_instructions") {
			t.Fatalf("exec: code %d, stderr %q (stdout %q)", code, errOut, out)
		}
		req := requestFor(t, h, "what next")
		txt := inputText(req)
		if !strings.Contains(txt, "<cx-context") || !strings.Contains(txt, "port the lexer to go") || !strings.Contains(txt, "echo lexer-ported") {
			t.Fatalf("fallback context missing from the request:\n%s", txt)
		}
		if n := strings.Count(txt, "<cx-context"); n != 1 {
			t.Fatalf("fallback context present %d times", n)
		}
	})
}

// A turn, /compact, the terminal closed before another turn, then `resume
// --last` and a turn: the resumed history holds each injected section once
// — the resume's checkpoint is the compaction's, not a second copy of it
// after the prompt (issue 25, item 2).
func TestResumeAfterCompactionNoRepeat(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		tu := h.StartTUI()
		tu.WaitReady()
		tu.Prompt("compact me later [[shell: echo compact-ok]]", "mock: done (1 steps)")
		tu.Type("/compact")
		time.Sleep(2 * time.Second)
		tu.WaitReady()
		tu.Signal(tu.CXPid(), syscall.SIGHUP) // the terminal closed
		tu.WaitExit(30 * time.Second)

		tu = h.StartTUI("resume", "--last")
		tu.WaitText("compact me later", 60*time.Second)
		tu.WaitReady()
		tu.Prompt("resumed after compaction", "mock reply: resumed after compaction")
		resumed := requestFor(t, h, "resumed after compaction")
		counts := sectionCounts(resumed)
		if len(counts) == 0 {
			t.Fatalf("no cx context in the resumed request:\n%s", inputText(resumed))
		}
		for s, n := range counts {
			if n != 1 {
				t.Fatalf("section %s is in the resumed request %d times:\n%s", s, n, inputText(resumed))
			}
		}
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)
	})
}
