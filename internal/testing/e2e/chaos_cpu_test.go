package e2e

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// cpuSplit is what cx's own lines say it cost, beside what Codex cost:
// each run's exit names Codex's CPU (wait4: Codex with the hooks it ran)
// and the wrapper's own; each hook's audit line its own (a hook the host
// answered, its client's: the host's part is in its process's line); each
// background sweep — the hook host — its own, once, as it leaves. A run killed outright says nothing (its wait4 total is
// still in the exec and app-server figure).
type cpuSplit struct {
	runs              int
	wrapper, codex    time.Duration // codex: with its hooks
	hooks, sweeps     int
	hookCPU, sweepCPU time.Duration
	// own: the hooks answered in their own process (no host took them),
	// and their CPU (in hookCPU too).
	own    int
	ownCPU time.Duration
	ownWhy map[string]int // by the client's reason (hookwire.OwnEnv)
	// mcps: the MCP servers Codex started (`cx mcp`, one a session),
	// Codex's children as hooks are: their CPU is taken out of Codex's.
	mcps   int
	mcpCPU time.Duration
	// killed: cx processes SIGKILLed (by the chaos run's faults, or its
	// cleanup), which leave no line; their CPU as read just before.
	killed    int
	killedCPU time.Duration
	// killedCodex: the CPU, read at the same moment, of the Codex below
	// a killed cx (and of what that Codex runs, cx's own processes aside),
	// which no exit line names either: Codex's side of the same runs.
	killedCodex time.Duration
}

var (
	runCPULine   = regexp.MustCompile(`cpu codex=(\S+) cx=(\S+)$`)
	sweepCPULine = regexp.MustCompile(`background sweep: .* cpu cx=(\S+)$`)
	mcpCPULine   = regexp.MustCompile(`mcp: leaving; cpu cx=(\S+)$`)
)

// readCPUSplit reads cx's logs under cxHome (the rotated ones too).
func readCPUSplit(cxHome string) cpuSplit {
	var c cpuSplit
	logDir := filepath.Join(cxHome, "logs")
	eachLine(logDir, "cx.log", func(line string) {
		if m := runCPULine.FindStringSubmatch(line); m != nil {
			codex, err1 := time.ParseDuration(m[1])
			cx, err2 := time.ParseDuration(m[2])
			if err1 == nil && err2 == nil {
				c.runs++
				c.codex += codex
				c.wrapper += cx
			}
		} else if m := sweepCPULine.FindStringSubmatch(line); m != nil {
			if d, err := time.ParseDuration(m[1]); err == nil {
				c.sweeps++
				c.sweepCPU += d
			}
		} else if m := mcpCPULine.FindStringSubmatch(line); m != nil {
			if d, err := time.ParseDuration(m[1]); err == nil {
				c.mcps++
				c.mcpCPU += d
			}
		}
	})
	eachLine(logDir, "hook-events.jsonl", func(line string) {
		var ev struct {
			CPU       *float64 `json:"cpu_ms"`
			ClientCPU *float64 `json:"client_cpu_ms"`
			Own       string   `json:"own"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil {
			for _, cpu := range []*float64{ev.CPU, ev.ClientCPU} {
				if cpu != nil {
					c.hooks++
					c.hookCPU += time.Duration(*cpu * float64(time.Millisecond))
				}
			}
			if ev.CPU != nil {
				c.own++
				c.ownCPU += time.Duration(*ev.CPU * float64(time.Millisecond))
				if c.ownWhy == nil {
					c.ownWhy = map[string]int{}
				}
				c.ownWhy[cmp.Or(ev.Own, "unsaid")]++
			}
		}
	})
	return c
}

// eachLine calls f for every line of name and of its rotated copy.
func eachLine(dir, name string, f func(string)) {
	for _, p := range []string{filepath.Join(dir, name+".1"), filepath.Join(dir, name)} {
		fh, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			f(sc.Text())
		}
		fh.Close()
	}
}

func (c cpuSplit) String() string {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	cx := c.wrapper + c.hookCPU + c.sweepCPU + c.mcpCPU + c.killedCPU
	codex := max(c.codex-c.hookCPU-c.mcpCPU, 0) + c.killedCodex
	return fmt.Sprintf("cx %v (wrappers of %d runs that exited %v, %d hooks %v (%d in their own process %v%s), %d background sweeps and hook hosts %v, %d MCP servers %v, %d SIGKILLed (faults, cleanup) %v); Codex %v (those runs' Codex, hooks and MCP servers taken out; and below the SIGKILLed %v); cx/Codex %.3f",
		ms(cx), c.runs, ms(c.wrapper), c.hooks, ms(c.hookCPU), c.own, ms(c.ownCPU), whyList(c.ownWhy), c.sweeps, ms(c.sweepCPU), c.mcps, ms(c.mcpCPU), c.killed, ms(c.killedCPU), ms(codex), ms(c.killedCodex), float64(cx)/float64(max(codex, 1)))
}

// cpuBelow is the CPU so far (ms) of the processes below pid that are not
// cx's own (their executable is not in cxDir, beside cx: its hook client
// and MCP front are cx's, and say what they cost themselves) and not in
// counted, which it marks: a killed cx's Codex, and what that Codex runs.
func cpuBelow(cxDir string, pid int, counted map[int]bool) float64 {
	total := 0.0
	for _, child := range Children(pid) {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", child))
		if filepath.Dir(exe) != cxDir && !counted[child] {
			counted[child] = true
			total += procCPU(child)
		}
		total += cpuBelow(cxDir, child, counted)
	}
	return total
}

// whyList is ": reason n, …" in the reasons' order ("" for none).
func whyList(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}
