package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cx/internal/codex"
	"cx/internal/hookwire"
	"cx/internal/proc"
	"cx/internal/testing/codextest"
	"cx/internal/testing/ovfake"

	_ "modernc.org/sqlite" // the local archive read back with SQL
)

// The chaos run: real Codex through cx — `cx exec` and `cx exec resume`,
// `cx app-server` daemons with several threads and turns, some resumed —
// to three sinks at once (local, OpenViking's server-faithful fake, exec),
// while faults strike at random times from a printed seed: cx killed
// (SIGKILL, SIGTERM, SIGHUP), Codex SIGKILLed, a hook process or the
// background sweeper SIGKILLed mid-work, the ledger held locked, the
// OpenViking server down, answering 503 or 409, losing answers, dropping
// connections, stalling; the exec sink failing and hanging. Then
// everything heals and `cx ctl sweep` runs until quiet, and a checker that
// does not read cx's bookkeeping compares what Codex's rollouts hold with
// what each sink received: every user turn of every thread stored exactly
// once in the local archive and on the OpenViking server, none missing,
// nothing that is no thread's; each session known to the exec sink.
//
// CX_CHAOS_DURATION (default 45s per Codex version), CX_CHAOS_SEED (a seed
// replays the same schedule of faults) and CX_CHAOS_SCALE (workers of
// each kind) tune it; `make chaos` runs it alone.
func TestChaos(t *testing.T) {
	dur := 45 * time.Second
	if d, err := time.ParseDuration(os.Getenv("CX_CHAOS_DURATION")); err == nil && d > 0 {
		dur = d
	}
	seed := time.Now().UnixNano() % 1_000_000
	if s, err := strconv.ParseInt(os.Getenv("CX_CHAOS_SEED"), 10, 64); err == nil {
		seed = s
	}
	scale := 1
	if n, err := strconv.Atoi(os.Getenv("CX_CHAOS_SCALE")); err == nil && n > 0 {
		scale = n
	}
	t.Logf("chaos seed %d (CX_CHAOS_SEED=%d replays it), %v per Codex version, scale %d", seed, seed, dur, scale)
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		c := newChaos(t, in, seed, scale)
		c.run(dur)
		c.heal()
		c.check()
	})
}

// chaos is one chaos run against one Codex version.
type chaos struct {
	t       *testing.T
	h       *H
	ov      *ovfake.Server
	execLog string // what the exec sink received, one JSON line per call
	execCtl string // "fail" or "hang" makes the exec sink do that
	scale   int

	mu      sync.Mutex
	rng     *rand.Rand
	procs   map[int]uint64 // live cx processes this run started: pid → start time
	faults  map[string]int
	struck  []struck // every fault, when
	prompts int
	// launched counts the cx processes the workload started (exec,
	// app-server, terminal), faults' targets all.
	launched int
	cxCPU    time.Duration
	// killed: the cx processes the faults SIGKILLed, or that still run
	// when the run is checked, which say nothing of what they cost, and
	// their CPU, read just before.
	killed    int
	killedCPU time.Duration
	// killedCodex is the CPU of what ran below them but cx's own
	// (cpuBelow), read at the same moment; below is who is counted in it.
	killedCodex time.Duration
	below       map[int]bool
	// fillable says CX_HOME is a small filesystem of its own that a fault
	// can fill; filling is the faults filling it now.
	fillable bool
	filling  sync.WaitGroup
	started  time.Time
	duration time.Duration
}

func newChaos(t *testing.T, in codextest.Install, seed int64, scale int) *chaos {
	h := New(t, in, Options{})
	ov, err := ovfake.StartWith(ovfake.Options{APIKey: "mock"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ov.Close)
	h.ExtraEnv = []string{"CX_TEST_BACKOFF=200ms", "CX_TEST_LEASE=10s"}
	c := &chaos{t: t, h: h, ov: ov, scale: scale, rng: rand.New(rand.NewSource(seed)), procs: map[int]uint64{},
		faults:  map[string]int{},
		execLog: filepath.Join(h.Root, "exec-sink.jsonl"), execCtl: filepath.Join(h.Root, "exec-sink.ctl")}
	script := filepath.Join(h.Root, "exec-sink.sh")
	cxExe, _ := filepath.EvalSymlinks(h.CX)
	os.WriteFile(script, []byte(fmt.Sprintf(`#!/bin/sh
runner=$PPID
# A parent that is no cx (init, or a subreaper): the cx died before this
# shell started; the process group it left still names it.
[ "$(readlink /proc/$PPID/exe)" = %q ] || runner=-$(cut -d' ' -f5 /proc/$$/stat)
case "$(cat %q 2>/dev/null)" in
fail) exit 1 ;;
hang) sleep 60 ;;
esac
line=$(cat)
printf '%%s %%s %%s\n' "$(date +%%s.%%N)" "$runner" "$line" >> %q
`, cxExe, c.execCtl, c.execLog)), 0o700)
	os.MkdirAll(h.CXHome, 0o700)
	if unmount, err := mountSmall(h.CXHome, cxHomeSize); err != nil {
		t.Logf("the CX_HOME-full fault is off: %v", err)
	} else {
		t.Cleanup(func() {
			if Keep(t) {
				// The tmpfs goes with its mount: what a failed run left is
				// kept beside it, with the rest of the run's folder.
				_ = exec.Command("cp", "-a", h.CXHome, h.CXHome+"-kept").Run()
			}
			unmount()
		})
		c.fillable = true
	}
	cfg := fmt.Sprintf("sinks = [\"local\", \"openviking\", \"exec\"]\n[openviking]\nurl = %q\ntimeout = \"2s\"\napi_key_env = \"CX_TEST_MOCK_KEY\"\n"+
		"[exec]\ncommand = [\"/bin/sh\", %q]\ntimeout = \"3s\"\n", ov.URL, script)
	if err := os.WriteFile(filepath.Join(h.CXHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// env is what every cx of the run starts with (the harness's, with
// retries within a second and a dead worker's lease over in ten).
func (c *chaos) env() []string { return c.h.Env() }

func (c *chaos) intn(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.Intn(n)
}

func (c *chaos) prompt(kind string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prompts++
	return fmt.Sprintf("chaos %s prompt %d.", kind, c.prompts)
}

// struck is one fault, when it struck, and the cx processes it hit (none
// for a fault of the ledger, the disk or a sink).
type struck struct {
	at   time.Time
	kind string
	hit  []int
}

func (c *chaos) count(fault string, hit ...int) {
	c.mu.Lock()
	c.faults[fault]++
	c.struck = append(c.struck, struck{time.Now(), fault, hit})
	c.mu.Unlock()
}

// execCall is one call the exec sink logged: when its command succeeded
// and the pid of the cx that ran it (the script's $PPID, fixed when the
// shell starts, so a call whose cx died before it finished still names it;
// minus its process group's id when that cx was dead before the shell
// started — a cx killed as it started the command).
type execCall struct {
	at     time.Time
	runner int
}

// explain names the fault that can have made calls[j] repeat calls[0]
// ("" when none can) — the crash window the README names: the cx that ran
// one of the calls killed or stopped (its exit cut the command short
// after it did its work, or it never recorded the success), or, for a
// call that succeeded, the disk full or the ledger locked past its busy
// timeout when cx went to record it.
func (c *chaos) explain(calls []execCall, j int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ran := map[int]bool{}
	for _, call := range calls[:j+1] {
		ran[call.runner] = true
	}
	say := func(f struck, call execCall) string {
		return fmt.Sprintf("%s at +%.1fs, %+.1fs from a call", f.kind, f.at.Sub(c.started).Seconds(), f.at.Sub(call.at).Seconds())
	}
	for _, f := range c.struck {
		for _, pid := range f.hit {
			// A command that hung past its runner's death logs when its
			// sleep ends, a minute on: the window reaches back that far.
			if ran[pid] && f.at.After(calls[0].at.Add(-70*time.Second)) && f.at.Before(calls[j].at) {
				for _, call := range calls[:j+1] {
					if call.runner == pid {
						return say(f, call) + " (its cx)"
					}
				}
			}
		}
		var before time.Duration // how long before a success the fault may start and still fail its record
		switch f.kind {
		case "CX_HOME full":
			before = 5 * time.Second // filling, then full for 1-3 s
		case "ledger locked":
			before = 3 * time.Second // held 1-3 s, past the 2 s busy timeout
		default:
			continue
		}
		for _, call := range calls[:j] {
			if f.at.After(call.at.Add(-before)) && f.at.Before(call.at.Add(500*time.Millisecond)) {
				return say(f, call)
			}
		}
	}
	return ""
}

// ownGroup starts a cx in a process group of its own, as a shell starts
// each job: a sink's command its death orphans still names it (withGroups).
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func (c *chaos) track(cmd *exec.Cmd) {
	c.mu.Lock()
	c.procs[cmd.Process.Pid] = proc.StartTime(cmd.Process.Pid)
	c.launched++
	c.mu.Unlock()
}

func (c *chaos) untrack(cmd *exec.Cmd) {
	c.mu.Lock()
	delete(c.procs, cmd.Process.Pid)
	if cmd.ProcessState != nil {
		c.cxCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	c.mu.Unlock()
}

// run drives the workload and the faults for d.
func (c *chaos) run(d time.Duration) {
	c.started, c.duration = time.Now(), d
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 2*c.scale; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.execWorker(ctx) }()
	}
	for i := 0; i < c.scale; i++ {
		wg.Add(2)
		go func() { defer wg.Done(); c.daemonWorker(ctx) }()
		go func() { defer wg.Done(); c.tuiWorker(ctx) }()
		if codex.CompareVersions(c.h.Codex.Version, "0.171.0") >= 0 {
			wg.Add(1)
			go func() { defer wg.Done(); c.subagentWorker(ctx) }()
		}
	}
	wg.Add(1)
	go func() { defer wg.Done(); c.faultWorker(ctx) }()
	wg.Wait()
}

// execWorker runs `cx exec` threads, resuming about half once.
func (c *chaos) execWorker(ctx context.Context) {
	for ctx.Err() == nil {
		p := c.prompt("exec")
		out, ok := c.exec(ctx, "exec", "--json", p)
		id := threadOf(out)
		if id == "" && ok {
			id = c.threadWith(p)
		}
		if !ok || id == "" || c.intn(2) == 0 {
			continue
		}
		c.exec(ctx, "exec", "resume", id, c.prompt("resume"))
	}
}

// subagentWorker runs `cx exec` threads whose model spawns a subagent
// that runs a command of its own: the v1 tools (found through
// tool_search), with and without the parent's history, and the v2 tools
// (multi_agent_v2), forked and not. The checker counts the children's
// turns as it counts every thread's.
func (c *chaos) subagentWorker(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		p := c.prompt("subagent")
		child := strings.TrimSuffix(p, ".") + " child task"
		var args []string
		switch i % 4 {
		case 0:
			args = []string{"exec", p + ` [[tool: spawn_agent {"message":"` + child + ` <<shell: echo child>>"}]] [[shell: sleep 1]]`}
		case 1:
			args = []string{"exec", p + ` [[tool: spawn_agent {"message":"` + child + ` <<shell: echo child>>","fork_context":true}]] [[shell: sleep 1]]`}
		case 2:
			args = []string{"exec", "--enable", "multi_agent_v2", p + ` [[tool: collaboration.spawn_agent {"task_name":"lister","message":"` + child + `"}]] [[child: <<shell: echo child>>]] [[shell: sleep 1]]`}
		default:
			args = []string{"exec", "--enable", "multi_agent_v2", p + ` [[tool: collaboration.spawn_agent {"task_name":"lister","message":"` + child + `","fork_turns":"none"}]] [[shell: sleep 1]]`}
		}
		c.exec(ctx, args...)
	}
}

// exec runs one `cx exec …` to its end (or its kill).
func (c *chaos) exec(ctx context.Context, args ...string) (string, bool) {
	cmd := exec.Command(c.h.CX, args...)
	cmd.Dir = c.h.Work
	cmd.Env = c.env()
	cmd.SysProcAttr = ownGroup()
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		c.t.Errorf("start cx exec: %v", err)
		return "", false
	}
	c.track(cmd)
	err := cmd.Wait()
	c.untrack(cmd)
	return out.String(), err == nil
}

// threadOf is the thread id `codex exec --json` announced.
func threadOf(out string) string {
	for _, line := range strings.Split(out, "\n") {
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "thread.started" {
			return ev.ThreadID
		}
	}
	return ""
}

// threadWith is the thread whose rollout holds text ("" if none).
func (c *chaos) threadWith(text string) string {
	for _, p := range c.h.Rollouts() {
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), text) {
			return rolloutID(p)
		}
	}
	return ""
}

// daemonWorker runs `cx app-server` daemons, each with threads of several
// turns, resuming threads of daemons that died; a daemon killed is
// replaced.
func (c *chaos) daemonWorker(ctx context.Context) {
	var old []string
	for ctx.Err() == nil {
		d, err := c.startDaemon()
		if err != nil {
			c.t.Errorf("start cx app-server: %v", err)
			return
		}
		for ctx.Err() == nil && d.alive() {
			var id string
			if len(old) > 0 && c.intn(3) == 0 {
				id = old[c.intn(len(old))]
				if _, err := d.call("thread/resume", map[string]any{"threadId": id}); err != nil {
					continue
				}
			} else {
				res, err := d.call("thread/start", map[string]any{"cwd": c.h.Work})
				th, _ := res["thread"].(map[string]any)
				if id, _ = th["id"].(string); err != nil || id == "" {
					continue
				}
				old = append(old, id)
			}
			for n := 1 + c.intn(3); n > 0 && d.alive(); n-- {
				if err := d.turn(id, c.prompt("daemon")); err != nil {
					break
				}
			}
		}
		d.stop()
	}
}

// faultWorker strikes every 0.5-3 s until the run ends.
func (c *chaos) faultWorker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(500+c.intn(2500)) * time.Millisecond):
		}
		c.strike()
	}
}

// cxHomeSize is the size of CX_HOME's own filesystem: room for a
// 20-minute run's ledger many times over, little enough to fill at once.
const cxHomeSize = 128 << 20

// strike injects one fault, chosen by the seed.
func (c *chaos) strike() {
	switch k := c.intn(12); k {
	case 0, 1, 2:
		sig := []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM, syscall.SIGHUP}[k]
		if pid := c.pick(); pid != 0 {
			hit := withGroups(cxChain(c.h.CX, pid))
			if sig == syscall.SIGKILL {
				c.costOfKilled(pid)
			}
			if syscall.Kill(pid, sig) == nil {
				c.count("cx "+unixSignal(sig), hit...)
			}
		}
	case 3:
		cx := c.pick()
		if pid := codexBelow(c.h.CX, cx); pid != 0 {
			hit := withGroups(cxChain(c.h.CX, cx))
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				c.count("codex SIGKILL", hit...)
			}
		}
	case 4:
		if hit := c.killOwn("ctl hook"); hit != nil {
			c.count("hook SIGKILL", hit...)
		}
	case 5:
		if hit := c.killOwn("ctl sweep --background"); hit != nil {
			c.count("sweeper SIGKILL", hit...)
		}
	case 6:
		c.count("ledger locked")
		go lockLedger(c.h.CXHome, time.Duration(1+c.intn(3))*time.Second)
	case 7:
		c.count("openviking down")
		c.ov.Down()
		go func(d time.Duration) {
			time.Sleep(d)
			if err := c.ov.Up(); err != nil {
				c.t.Logf("the OpenViking fake is still down (heal brings it up): %v", err)
			}
		}(time.Duration(1+c.intn(3)) * time.Second)
	case 8:
		f := []ovfake.Fault{
			{Route: "/messages", Status: 503, Count: 3},
			{Route: "/messages", AfterWork: true, Status: 500},
			{Route: "/messages", Drop: true},
			{Route: "/commit", Drop: true},
			{Route: "/commit", Status: 409, Retryable: true},
			{Route: "/messages", Stall: 3 * time.Second},
			{Route: "/messages", Delay: 3 * time.Second},
		}[c.intn(7)]
		c.ov.Inject(f)
		c.count(fmt.Sprintf("openviking %s", faultName(f)))
	case 9, 10:
		mode := []string{"fail", "hang"}[k-9]
		c.count("exec sink " + mode)
		os.WriteFile(c.execCtl, []byte(mode), 0o600)
		go func(d time.Duration) { time.Sleep(d); os.WriteFile(c.execCtl, nil, 0o600) }(time.Duration(1+c.intn(4)) * time.Second)
	case 11:
		if c.fillable {
			c.count("CX_HOME full")
			c.filling.Add(1)
			go c.fill(time.Duration(1+c.intn(3)) * time.Second)
		}
	}
}

// fill leaves CX_HOME's filesystem without a free byte for d: every write
// of cx there (the ledger, its journal, logs, breadcrumbs) fails with
// ENOSPC meanwhile.
func (c *chaos) fill(d time.Duration) {
	defer c.filling.Done()
	f, err := os.CreateTemp(c.h.CXHome, "ballast-")
	if err != nil {
		return // full already
	}
	defer os.Remove(f.Name())
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	time.Sleep(d)
}

// cxChain is pid and each copy of cx below it (a terminal's cx runs
// under a session leader that is a copy of cx): the processes a signal to
// pid reaches, and that may run a sink's command.
func cxChain(cx string, pid int) []int {
	exe, _ := filepath.EvalSymlinks(cx)
	chain := []int{pid}
	for {
		cs := RunChildren(pid)
		if len(cs) == 0 {
			return chain
		}
		if self, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", cs[0])); self != exe {
			return chain
		}
		pid = cs[0]
		chain = append(chain, pid)
	}
}

// codexBelow is the Codex process under the cx of pid (below its session
// leader, a copy of cx, on a terminal); 0 if none.
func codexBelow(cx string, pid int) int {
	exe, _ := filepath.EvalSymlinks(cx)
	for pid != 0 {
		cs := RunChildren(pid)
		if len(cs) == 0 {
			return 0
		}
		if self, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", cs[0])); self != exe {
			return cs[0]
		}
		pid = cs[0]
	}
	return 0
}

// orNone joins a list for the report ("none" when empty).
func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, "; ")
}

func unixSignal(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}[s]
}

func faultName(f ovfake.Fault) string {
	switch {
	case f.Drop:
		return f.Route + " dropped"
	case f.AfterWork:
		return f.Route + " answer lost"
	case f.Stall > 0:
		return f.Route + " stalled"
	case f.Delay > 0:
		return f.Route + " slow"
	}
	return fmt.Sprintf("%s %d", f.Route, f.Status)
}

// pick is a live cx process of the run, chosen by the seed (0: none).
func (c *chaos) pick() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := make([]int, 0, len(c.procs))
	for pid, start := range c.procs {
		// A terminal's cx may be gone before its worker notices; its pid,
		// reused, could be anything's — on Linux a thread of this test.
		if !proc.Alive(pid, start) {
			continue
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		return 0
	}
	sort.Ints(pids)
	return pids[c.rng.Intn(len(pids))]
}

// killOwn SIGKILLs one process of this run (its CX_HOME) whose command line
// holds what, and says which (withGroups; nil: none).
func (c *chaos) killOwn(what string) []int {
	for _, pid := range cxOf(c.h.CXHome) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), what) {
			continue
		}
		hit := withGroups([]int{pid})
		c.costOfKilled(pid)
		if syscall.Kill(pid, syscall.SIGKILL) != nil {
			return nil
		}
		return hit
	}
	return nil
}

// costOfKilled counts the CPU a cx process about to be SIGKILLed has used:
// it will not say so in its logs.
func (c *chaos) costOfKilled(pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.countKilled(pid)
}

// countKilled adds pid's CPU to cx's side and that of its Codex below to
// Codex's (with c.mu held).
func (c *chaos) countKilled(pid int) {
	if c.below == nil {
		c.below = map[int]bool{}
	}
	c.killed++
	c.killedCPU += time.Duration(procCPU(pid) * float64(time.Millisecond))
	c.killedCodex += time.Duration(cpuBelow(filepath.Dir(c.h.CX), pid, c.below) * float64(time.Millisecond))
}

// withGroups is pids and, negated, the process group of each: what a
// sink's command started as its cx died logs for it.
func withGroups(pids []int) []int {
	out := slices.Clone(pids)
	for _, pid := range pids {
		if g, err := syscall.Getpgid(pid); err == nil && g > 1 && !slices.Contains(out, -g) {
			out = append(out, -g)
		}
	}
	return out
}

// lockLedger holds the ledger's write lock for d, as another process might.
func lockLedger(cxHome string, d time.Duration) {
	release, err := codextest.HoldLedger(cxHome)
	if err != nil {
		return
	}
	time.Sleep(d)
	release()
}

// heal ends every fault, then sweeps until nothing is pending, parked or
// live.
func (c *chaos) heal() {
	c.filling.Wait()
	if err := c.ov.Up(); err != nil {
		c.t.Fatalf("heal: %v", err)
	}
	os.WriteFile(c.execCtl, nil, 0o600)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		c.ctl("retry", "--all")
		c.ctl("sweep", "--wait", "20s")
		var st struct {
			Live    []any `json:"live_sessions"`
			Pending []any `json:"pending_jobs"`
			Parked  []any `json:"parked_jobs"`
		}
		out := c.ctl("status", "--json")
		if json.Unmarshal([]byte(out), &st) == nil && len(st.Live)+len(st.Pending)+len(st.Parked) == 0 {
			// The hook host leaves now, and its line says what it cost.
			hookwire.StopHost(c.h.CXHome, 10*time.Second)
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("not quiet 3 minutes after healing:\n%s", out)
		}
		time.Sleep(time.Second)
	}
}

func (c *chaos) ctl(args ...string) string {
	cmd := exec.Command(c.h.CX, append([]string{"ctl"}, args...)...)
	cmd.Dir = c.h.Work
	cmd.Env = c.env()
	out, _ := cmd.Output()
	return string(out)
}

// expected is what Codex's own rollouts say the sinks must hold: each
// thread's user prompts of this run, in order, read here from the JSONL
// (not with cx's rollout reader); and every thread Codex wrote a rollout
// for, the only threads a sink may hold (a helper thread has none).
func (c *chaos) expected() (want map[string][]string, threads map[string]bool) {
	want, threads = map[string][]string{}, map[string]bool{}
	var files []string
	for _, dir := range []string{"sessions", "archived_sessions"} {
		filepath.Walk(filepath.Join(c.h.CodexHome, dir), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && strings.HasSuffix(p, ".jsonl") {
				files = append(files, p)
			}
			return nil
		})
	}
	for _, p := range files {
		id := rolloutID(p)
		threads[id] = true
		want[id] = append(want[id], typedTexts(userInputs(p))...)
		if len(want[id]) == 0 {
			delete(want, id)
		}
	}
	return want, threads
}

// typedTexts keeps the texts a user typed: not Codex's own context
// messages (<environment_context>, <turn_aborted>, # AGENTS.md, …, each
// opening with its tag). They may be other than the prompts the workload
// sent — keys typed into a terminal go where Codex takes them (a prompt
// typed while 0.169's /new dialog was up chose a worktree there) — and
// what Codex took as the user's prompt is what each sink must hold.
func typedTexts(texts []string) []string {
	var out []string
	for _, t := range texts {
		if !codexContext(t) {
			out = append(out, t)
		}
	}
	return out
}

// codexContext reports whether a user-role text is one of Codex's own
// context messages, each opening with its tag.
func codexContext(t string) bool {
	tt := strings.TrimSpace(t)
	return strings.HasPrefix(tt, "<") || strings.HasPrefix(tt, "# AGENTS.md")
}

// userInputs is the text of each user input Codex recorded in the rollout
// at path, in order, each once: response items of the user's role (0.169
// writes no user_message event; a resumed or forked history may repeat
// one), read as JSONL here, not with cx's rollout reader. Codex's own
// context messages (<environment_context>) are among them; cx's injected
// blocks, developer messages, are not.
func userInputs(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []string
	seen := map[string]bool{}
	metas, ownFrom := 0, -1
	// taken: the current task has its input already (a user's message, or
	// another agent's that began it); an agent's message after that is
	// context of the turn (a child's answer), not a turn of its own.
	taken := false
	for sc.Scan() {
		var rec struct {
			Type    string `json:"type"`
			Ordinal *int   `json:"ordinal"`
			Payload struct {
				Type    string `json:"type"`
				Role    string `json:"role"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
				HistoryStart *int `json:"subagent_history_start_ordinal"`
			} `json:"payload"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		if rec.Type == "session_meta" {
			// A forked subagent's rollout repeats its parent's history up to
			// the ordinal its own session_meta names (0.171): not its own.
			if metas++; metas == 1 && rec.Payload.HistoryStart != nil {
				ownFrom = *rec.Payload.HistoryStart
			}
			continue
		}
		if ownFrom >= 0 && rec.Ordinal != nil && *rec.Ordinal < ownFrom {
			continue
		}
		var text string
		switch {
		case rec.Type == "event_msg" && rec.Payload.Type == "task_started":
			taken = false
		case rec.Type == "response_item" && rec.Payload.Type == "message" && rec.Payload.Role == "user":
			for _, part := range rec.Payload.Content {
				if part.Type != "input_text" {
					continue
				}
				if !codexContext(part.Text) {
					taken = true
				}
				if !seen[part.Text] {
					seen[part.Text] = true
					out = append(out, part.Text)
				}
			}
			continue
		case rec.Type == "response_item" && rec.Payload.Type == "agent_message" && !taken:
			taken = true
			// A v2 subagent's task: its plain parts (the rest is encrypted).
			for _, part := range rec.Payload.Content {
				if part.Type == "input_text" {
					text += part.Text
				}
			}
		}
		if text = strings.TrimSpace(text); text != "" && !seen[text] {
			seen[text] = true
			out = append(out, text)
		}
	}
	return out
}

// stored counts, per thread and prompt, what the local archive holds and
// what the OpenViking server stored.
func (c *chaos) stored(want map[string][]string) (local, ov map[string]map[string]int) {
	local, ov = map[string]map[string]int{}, map[string]map[string]int{}
	count := func(into map[string]map[string]int, id string, texts []string) {
		// Every user text counts: anything a sink holds as a user's that
		// the thread's rollout does not is phantom.
		for _, text := range texts {
			if into[id] == nil {
				into[id] = map[string]int{}
			}
			into[id][text]++
		}
	}
	ids := map[string]bool{}
	for id := range want {
		ids[id] = true
	}
	for id, texts := range archivedPrompts(c.t, c.h.CXHome) {
		count(local, id, texts)
		ids[id] = true
	}
	for id := range ids {
		count(ov, id, c.ov.UserTexts("cx-"+id))
	}
	return local, ov
}

// archivedPrompts is, per session, the user text of each turn the local
// sink archived, read with SQL from its table, not through cx.
func archivedPrompts(t testing.TB, cxHome string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for id, gens := range archivedGenerations(t, cxHome) {
		for _, g := range gens {
			out[id] = append(out[id], g.users...)
		}
	}
	return out
}

// archivedGeneration is one generation the local sink archived: its
// number and the user text of each of its turns.
type archivedGeneration struct {
	generation int
	users      []string
}

// archivedGenerations is, per session, each generation the local sink
// archived, in order, read with SQL from its table.
func archivedGenerations(t testing.TB, cxHome string) map[string][]archivedGeneration {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(cxHome, "cx.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT session_id, generation, turns FROM archives ORDER BY session_id, generation`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]archivedGeneration{}
	for rows.Next() {
		var id, turns string
		var g archivedGeneration
		if err := rows.Scan(&id, &g.generation, &turns); err != nil {
			t.Fatal(err)
		}
		var ts []struct {
			User string `json:"user"`
		}
		if err := json.Unmarshal([]byte(turns), &ts); err != nil {
			t.Fatalf("the local archive of %s/%d: %v", id, g.generation, err)
		}
		for _, tt := range ts {
			if tt.User != "" { // a turn Codex's goal started has no user text
				g.users = append(g.users, tt.User)
			}
		}
		out[id] = append(out[id], g)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tally compares one sink's store with what the rollouts hold.
type tally struct{ expected, stored, duplicated, missing, phantom int }

func compare(want map[string][]string, got map[string]map[string]int) (tally, []string) {
	var t tally
	var problems []string
	for id, prompts := range want {
		for _, p := range prompts {
			t.expected++
			switch n := got[id][p]; {
			case n == 0:
				t.missing++
				problems = append(problems, fmt.Sprintf("missing %s: %q", id, p))
			case n > 1:
				t.stored++
				t.duplicated += n - 1
				problems = append(problems, fmt.Sprintf("%d times %s: %q", n, id, p))
			default:
				t.stored++
			}
		}
	}
	for id, ps := range got {
		for p := range ps {
			found := false
			for _, w := range want[id] {
				found = found || w == p
			}
			if !found {
				t.phantom++
				problems = append(problems, fmt.Sprintf("phantom %s: %q (in no rollout of that thread)", id, p))
			}
		}
	}
	return t, problems
}

// check is the checker: it trusts Codex's rollouts and the sinks'
// stores, never cx's ledger bookkeeping.
func (c *chaos) check() {
	want, threads := c.expected()
	local, ov := c.stored(want)
	lt, lp := compare(want, local)
	ot, op := compare(want, ov)
	// The exec sink: every thread with a turn ended at least once; a
	// repeat of one generation is allowed only in the crash window the
	// README names (a cx killed between the command's exit and its record).
	calls := map[string][]execCall{}
	data, _ := os.ReadFile(c.execLog)
	execSessions := map[string]bool{}
	execGens := map[string]map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		at, rest, _ := strings.Cut(line, " ")
		runner, payload, _ := strings.Cut(rest, " ")
		var p struct {
			SessionID  string `json:"session_id"`
			Generation int    `json:"generation"`
		}
		secs, _ := strconv.ParseFloat(at, 64)
		if json.Unmarshal([]byte(payload), &p) == nil && p.SessionID != "" {
			key := fmt.Sprintf("%s/%d", p.SessionID, p.Generation)
			pid, _ := strconv.Atoi(runner)
			calls[key] = append(calls[key], execCall{time.Unix(0, int64(secs*1e9)), pid})
			execSessions[p.SessionID] = true
			if execGens[p.SessionID] == nil {
				execGens[p.SessionID] = map[int]bool{}
			}
			execGens[p.SessionID][p.Generation] = true
		}
	}
	var et tally
	for id, prompts := range want {
		if len(prompts) == 0 {
			continue
		}
		et.expected++
		if execSessions[id] {
			et.stored++
		} else {
			et.missing++
			lp = append(lp, "exec sink never called for "+id)
		}
	}
	for id := range execSessions {
		if _, ok := want[id]; !ok {
			et.phantom++
			lp = append(lp, fmt.Sprintf("the exec sink was called for %s, whose rollout holds no user turn (the local sink archived %q)",
				id, archivedPrompts(c.t, c.h.CXHome)[id]))
		}
	}
	var repeats []string
	unexplained := 0
	for key, cs := range calls {
		sort.Slice(cs, func(a, b int) bool { return cs[a].at.Before(cs[b].at) })
		for j := 1; j < len(cs); j++ {
			et.duplicated++
			why := c.explain(cs, j)
			if why == "" {
				unexplained++
				why = fmt.Sprintf("NO crash of its cx (pids %d, %d) in its window", cs[0].runner, cs[j].runner)
			}
			repeats = append(repeats, fmt.Sprintf("%s repeated (%s)", key, why))
		}
	}
	sort.Strings(repeats)
	gens := len(calls) // each generation ended reaches the exec sink
	turns := 0
	var otherwise []string // typed, but not as the workload sent it
	for id, ps := range want {
		turns += len(ps)
		for _, p := range ps {
			if !strings.HasPrefix(p, "chaos ") {
				otherwise = append(otherwise, fmt.Sprintf("%s %q", id, p))
			}
		}
	}
	sort.Strings(otherwise)
	c.mu.Lock()
	var faults []string
	total := 0
	for k, n := range c.faults {
		faults = append(faults, fmt.Sprintf("%s %d", k, n))
		total += n
	}
	for _, pid := range cxOf(c.h.CXHome) {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe == c.h.CX {
			c.countKilled(pid) // by the cleanup, next
		}
	}
	cpu, launched := c.cxCPU, c.launched
	split := readCPUSplit(c.h.CXHome)
	split.killed, split.killedCPU, split.killedCodex = c.killed, c.killedCPU, c.killedCodex
	c.mu.Unlock()
	sort.Strings(faults)
	sh := c.shapes(threads, execGens)
	c.t.Logf("chaos report (%s, %v of faults, %v wall with healing and checking):\n  cx processes started %d, threads %d, user turns %d, generations (exec sink) %d, prompts sent %d\n  faults %d: %s\n"+
		"  sink        expected  stored  duplicated  missing  phantom\n"+
		"  local       %8d  %6d  %10d  %7d  %7d\n  openviking  %8d  %6d  %10d  %7d  %7d\n  exec        %8d  %6d  %10d  %7d  %7d   (sessions; duplicates are repeated generations)\n"+
		"  sessions in a sink that are no thread with a rollout (helpers) %d; OpenViking archives not one generation's turns, or left uncommitted, %d; generations archived locally and never given to the exec sink (or the reverse) %d\n"+
		"  CPU of the exec and app-server runs (cx and the Codex below it, wait4) %v\n  CPU by cx's own lines: %v\n  exec repeats: %s\n  user turns Codex took otherwise than sent (keys typed while a terminal was not reading): %s",
		c.h.Codex.Version, c.duration, time.Since(c.started).Round(time.Second), launched, len(want), turns, gens, c.prompts, total, strings.Join(faults, ", "),
		lt.expected, lt.stored, lt.duplicated, lt.missing, lt.phantom, ot.expected, ot.stored, ot.duplicated, ot.missing, ot.phantom,
		et.expected, et.stored, et.duplicated, et.missing, et.phantom, sh.helpers, sh.mixed, sh.execMissed, cpu.Round(time.Millisecond), split, orNone(repeats), orNone(otherwise))
	if v := c.ov.Violations(); len(v) > 0 {
		c.t.Errorf("outside the OpenViking server's contract: %v", v)
	}
	if lt.missing+lt.duplicated+lt.phantom+ot.missing+ot.duplicated+ot.phantom+et.missing+et.phantom+unexplained+sh.helpers+sh.mixed+sh.execMissed > 0 {
		all := append(append(append(append(lp, op...), sh.problems...), repeats...), "")
		if len(all) > 40 {
			all = all[:40]
		}
		c.t.Fatalf("chaos found what exactly-once forbids (seed in the log above):\n%s", strings.Join(all, "\n"))
	}
}
