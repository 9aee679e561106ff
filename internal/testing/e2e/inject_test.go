package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cx/internal/testing/codextest"
	"cx/internal/testing/mockmodel"
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

// emptySection is the first heading in text followed by nothing before the
// next heading of its level or above, or the end of a cx block ("" if none).
func emptySection(text string) string {
	level := func(l string) int {
		n := len(l) - len(strings.TrimLeft(l, "#"))
		if n == 0 || !strings.HasPrefix(l[n:], " ") {
			return 0
		}
		return n
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		k := level(l)
		if k == 0 {
			continue
		}
		for _, next := range lines[i+1:] {
			if strings.TrimSpace(next) == "" {
				continue
			}
			if j := level(next); (j > 0 && j <= k) || strings.HasPrefix(next, "</cx-context>") {
				return l
			}
			break
		}
	}
	return ""
}

var cxBlock = regexp.MustCompile(`(?s)<cx-context .*?</cx-context>`)

// cxBlocks is the cx context blocks in text, one after another.
func cxBlocks(text string) string { return strings.Join(cxBlock.FindAllString(text, -1), "\n") }

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
		// No heading without a body, and none of what is written for people.
		if m := emptySection(cxBlocks(inputText(first))); m != "" {
			t.Fatalf("an empty section is injected (%q):\n%s", m, inputText(first))
		}
		if strings.Contains(inputText(first), "Edit freely") {
			t.Fatalf("the continuity file's preamble is injected:\n%s", inputText(first))
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

// Threads started side by side in one worktree, each resumed for a second
// turn: a resumed thread's request carries its own goal and no other
// thread's (issue 25, item 3: the worktree's continuity was whichever
// thread ended last).
func TestConcurrentThreadsResumeWithTheirOwnGoal(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		const n = 4
		marker := func(i int) string { return fmt.Sprintf("quokka%dgoal", i) }
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, errOut, code := h.Exec("", "exec", "build the "+marker(i)+" widget"); code != 0 {
					t.Errorf("thread %d: exit %d: %s", i, code, errOut)
				}
			}()
		}
		wg.Wait()
		committedOnce(t, h)
		ids := map[int]string{}
		// A thread is the one whose user asked for its widget: a later
		// thread's rollout holds an earlier one's goal too, in the
		// worktree's continuity cx gave it at its start.
		for _, p := range h.Rollouts() {
			for _, text := range userInputs(p) {
				for i := 0; i < n; i++ {
					if text == "build the "+marker(i)+" widget" {
						ids[i] = rolloutID(p)
					}
				}
			}
		}
		if len(ids) != n {
			t.Fatalf("threads found %v in %v", ids, h.Rollouts())
		}
		for i := 0; i < n; i++ {
			prompt := fmt.Sprintf("second turn of thread %d", i)
			if _, errOut, code := h.Exec("", "exec", "resume", ids[i], prompt); code != 0 {
				t.Fatalf("resume %d: exit %d: %s", i, code, errOut)
			}
			text := inputText(requestFor(t, h, prompt))
			if !strings.Contains(text, marker(i)) {
				t.Fatalf("resumed thread %d lacks its own goal:\n%s", i, text)
			}
			// Its history holds what it was given at its start: under load
			// another thread may have ended first, and the worktree's
			// continuity then named that one's goal. The resume adds none.
			first := inputText(requestFor(t, h, "build the "+marker(i)+" widget"))
			for j := 0; j < n; j++ {
				if j != i && strings.Count(text, marker(j)) > strings.Count(first, marker(j)) {
					t.Fatalf("resumed thread %d is told thread %d's goal (beyond what its first request held):\n%s", i, j, text)
				}
			}
		}
	})
}
