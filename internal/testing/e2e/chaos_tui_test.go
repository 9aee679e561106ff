package e2e

import (
	"context"
	"regexp"
	"time"

	"cx/internal/codex"
	"cx/internal/proc"
)

// tuiWorker runs interactive Codex through cx in tmux terminals: a few
// turns, sometimes /new or /compact between them, then /exit or the
// terminal closed; a fault may end it first.
func (c *chaos) tuiWorker(ctx context.Context) {
	for ctx.Err() == nil {
		tu := c.h.StartTUI()
		pid := tu.pid // 0 if cx never started
		if pid == 0 {
			tu.Close()
			continue
		}
		c.mu.Lock()
		c.procs[pid] = tu.start
		c.launched++
		c.mu.Unlock()
		c.tuiSession(ctx, tu)
		if !tu.Exited() {
			if c.intn(2) == 0 {
				tu.Slash("/exit")
			} else {
				c.count("terminal closed", withGroups(cxChain(c.h.CX, pid))...)
				_, _ = tu.tmux("kill-server") // SIGHUP, as a closed window sends
			}
		}
		for deadline := time.Now().Add(30 * time.Second); proc.Alive(pid, tu.start) && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		tu.Close()
		c.mu.Lock()
		delete(c.procs, pid)
		c.mu.Unlock()
	}
}

// tuiSession types a few prompts, each waited for, with /new or /compact
// now and then; it returns early when cx or Codex is gone.
func (c *chaos) tuiSession(ctx context.Context, tu *TUI) {
	if !c.screen(tu, Ready, 60*time.Second) {
		return
	}
	for n := 1 + c.intn(3); n > 0 && ctx.Err() == nil && !tu.Exited(); n-- {
		p := c.prompt("tui")
		tu.Type(p)
		if !c.screen(tu, regexp.MustCompile(regexp.QuoteMeta("mock reply: "+p)), 60*time.Second) || !c.screen(tu, Ready, 30*time.Second) {
			return
		}
		switch c.intn(5) {
		case 0:
			tu.Type("/new")
			if codex.CompareVersions(c.h.Codex.Version, "0.169.0") >= 0 && c.screen(tu, whereToRun, 20*time.Second) {
				tu.Keys("Enter")
			}
			if !c.screen(tu, Ready, 30*time.Second) {
				return
			}
		case 1:
			tu.Type("/compact")
			time.Sleep(time.Second) // the compaction's request starts
			if !c.screen(tu, Ready, 60*time.Second) {
				return
			}
		}
	}
}

// screen waits up to d for re on the terminal; false when it never shows
// (or cx exited): a fault, not a failure.
func (c *chaos) screen(tu *TUI, re *regexp.Regexp, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if tu.Exited() {
			return false
		}
		if re.MatchString(tu.Screen()) {
			return true
		}
	}
	return false
}
