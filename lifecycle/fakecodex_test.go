package lifecycle_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"cx/internal/codex"
)

// The test binary doubles as a fake Codex (FAKE_CODEX=1): it answers
// --version/--help, then follows the steps in FAKE_SCRIPT (one per line),
// writing rollout files and lock files the way real Codex does and running
// the hook commands of $CODEX_HOME/hooks.json with real payload shapes.
//
//	start ID              ($V7: a thread id born now) create ID's lock file (held open) and rollout with session_meta
//	hook EVENT ID [SRC]   run EVENT's hooks for ID (SRC: SessionStart source / compaction trigger)
//	turn ID TEXT…         a whole turn: UserPromptSubmit, rollout records, Stop, task_complete
//	compact ID            PreCompact, a compacted record, PostCompact
//	work ID TEXT…         a whole turn that runs a command (an exec_command call and its output)
//	abort ID TEXT…        a turn interrupted before it finished
//	nested ID             run a nested fake Codex (a child, as `codex exec` from a tool call) that starts ID
//	garbage ID            append an unparsable line to ID's rollout
//	archive ID            move ID's rollout to archived_sessions/, as archiving a thread does
//	quiet on|off          run no hooks (what reaches cx comes from the rollout alone)
//	steady                a stop signal (cx's death sends one) waits for the next `wait`: the steps
//	                      before it run whole, however soon cx dies
//	sleep MS              wait
//	linger MS             keep the thread locks held MS after this process is gone (a child holds
//	                      them; /proc/locks still names this pid), as the kernel may let a lock go late
//	wait                  block until stdin closes or a signal arrives
//	exit N                exit with status N
//	die SIG               die of signal SIG (a number)
//
// FAKE_NO_LOCKS=1 plays 0.128: it says it is 0.128.0 and keeps no writer
// locks.
//
// FAKE_HOOK_LOG names a file each hook run appends "EVENT WALL_µs CPU_µs"
// to (the hook's process, start to answer; its user + system time).
func fakeCodexMain() int {
	for _, a := range os.Args[1:] {
		switch a {
		case "--version":
			fmt.Println("codex-cli " + fakeVersion())
			return 0
		case "--help":
			fmt.Println("Commands:\n  exec  Run\n  resume  Resume\n\nOptions:\n  -c, --config <key=value>\n          x\n  -h, --help\n          Print help")
			return 0
		}
	}
	home := os.Getenv("CODEX_HOME")
	f := &fake{home: home, open: map[string]*os.File{}, rollouts: map[string]string{}, turn: map[string]int{}}
	// $V7 is a thread id born now (a UUIDv7), as Codex makes one.
	ms := time.Now().UnixMilli()
	script := strings.ReplaceAll(os.Getenv("FAKE_SCRIPT"), "$V7", fmt.Sprintf("%08x-%04x-7abc-8def-0123456789ab", ms>>16, ms&0xffff))
	for _, line := range strings.Split(script, "\n") {
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		if code, done := f.step(fs); done {
			return code
		}
	}
	return 0
}

type fake struct {
	home     string
	open     map[string]*os.File
	rollouts map[string]string
	turn     map[string]int
	quiet    bool
	stops    chan os.Signal // set by `steady`
}

func (f *fake) rollout(id string) string {
	if p, ok := f.rollouts[id]; ok {
		return p
	}
	// A resumed session: its rollout already exists.
	matches, _ := filepath.Glob(filepath.Join(f.home, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	if len(matches) > 0 {
		f.rollouts[id] = matches[0]
		return matches[0]
	}
	dir := filepath.Join(f.home, "sessions", "2026", "11", "22")
	if os.Getenv("FAKE_TODAY") == "1" { // where Codex writes a thread born today
		dir = filepath.Join(f.home, "sessions", time.Now().Format("2006/01/02"))
	}
	_ = os.MkdirAll(dir, 0o700)
	p := filepath.Join(dir, "rollout-2026-11-22T01-00-00-"+id+".jsonl")
	f.rollouts[id] = p
	return p
}

func (f *fake) write(id string, recs ...map[string]any) {
	fh, err := os.OpenFile(f.rollout(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		panic(err)
	}
	defer fh.Close()
	for _, r := range recs {
		b, _ := json.Marshal(map[string]any{"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "type": r["type"], "payload": r["payload"]})
		fh.Write(append(b, '\n'))
	}
}

func rec(typ string, payload map[string]any) map[string]any {
	return map[string]any{"type": typ, "payload": payload}
}

// fakeVersion is the version the fake says it is.
func fakeVersion() string {
	if os.Getenv("FAKE_NO_LOCKS") == "1" {
		return "0.128.0"
	}
	return "0.999.0"
}

func (f *fake) step(fs []string) (int, bool) {
	switch fs[0] {
	case "start":
		id := fs[1]
		dir := filepath.Join(f.home, "thread-writer-locks")
		if os.Getenv("FAKE_NO_LOCKS") != "1" {
			_ = os.MkdirAll(dir, 0o700)
		}
		lock, err := os.OpenFile(filepath.Join(dir, id+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err == nil {
			_ = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
			f.open[id] = lock // held for the process's life, as Codex does
		}
		if _, err := os.Stat(f.rollout(id)); err != nil {
			cwd, _ := os.Getwd()
			f.write(id, rec("session_meta", map[string]any{"id": id, "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "cwd": cwd, "originator": "fake", "cli_version": fakeVersion()}))
		}
	case "hook":
		src := ""
		if len(fs) > 3 {
			src = fs[3]
		}
		f.hook(fs[1], fs[2], map[string]any{"source": src, "trigger": src, "model": "mock"})
	case "turn", "abort", "work":
		id := fs[1]
		text := strings.Join(fs[2:], " ")
		f.turn[id]++
		tid := fmt.Sprintf("%s-turn-%d-%d", id, os.Getpid(), f.turn[id])
		f.hook("UserPromptSubmit", id, map[string]any{"turn_id": tid, "prompt": text})
		f.write(id,
			rec("event_msg", map[string]any{"type": "task_started", "turn_id": tid}),
			rec("response_item", map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}),
			rec("event_msg", map[string]any{"type": "user_message", "message": text}),
		)
		if fs[0] == "abort" {
			f.write(id, rec("event_msg", map[string]any{"type": "turn_aborted", "turn_id": tid, "reason": "interrupted"}))
			f.hook("Interrupt", id, map[string]any{"turn_id": tid})
			return 0, false
		}
		if fs[0] == "work" {
			// As 0.169+ records a shell call: the call, then its output.
			call := tid + "-call"
			f.write(id,
				rec("response_item", map[string]any{"type": "function_call", "name": "exec_command", "call_id": call, "arguments": `{"cmd":"echo work"}`}),
				rec("response_item", map[string]any{"type": "function_call_output", "call_id": call, "output": "Process exited with code 0\nOutput:\nwork\n"}),
			)
		}
		f.write(id, rec("response_item", map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "fake reply: " + text}}}))
		f.hook("Stop", id, map[string]any{"turn_id": tid, "stop_hook_active": false, "last_assistant_message": "fake reply: " + text})
		f.write(id, rec("event_msg", map[string]any{"type": "task_complete", "turn_id": tid}))
	case "compact":
		id := fs[1]
		f.hook("PreCompact", id, map[string]any{"trigger": "manual", "turn_id": "c"})
		f.write(id, rec("compacted", map[string]any{"message": "summary"}))
		f.hook("PostCompact", id, map[string]any{"trigger": "manual", "turn_id": "c"})
	case "archive":
		dir := filepath.Join(f.home, "archived_sessions")
		_ = os.MkdirAll(dir, 0o700)
		to := filepath.Join(dir, filepath.Base(f.rollout(fs[1])))
		if err := os.Rename(f.rollout(fs[1]), to); err != nil {
			panic(err)
		}
		f.rollouts[fs[1]] = to
	case "quiet":
		f.quiet = fs[1] == "on"
	case "garbage":
		fh, _ := os.OpenFile(f.rollout(fs[1]), os.O_WRONLY|os.O_APPEND, 0o600)
		fh.Write([]byte("{\"timestamp\": \"x\", \"type\": \"event_msg\", \"payload\": {trunc\n"))
		fh.Close()
	case "nested":
		cmd := exec.Command("sh", "-c", `exec "$0"`, os.Args[0])
		cmd.Env = append(os.Environ(), "FAKE_SCRIPT=start "+fs[1]+"\nhook SessionStart "+fs[1]+" startup\nturn "+fs[1]+" nested work")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		_ = cmd.Run()
	case "linger":
		cmd := exec.Command("sleep", strconv.FormatFloat(float64(mustAtoi(fs[1]))/1000, 'f', 3, 64))
		for _, lock := range f.open {
			cmd.ExtraFiles = append(cmd.ExtraFiles, lock)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // not stopped with this process
		_ = cmd.Start()
	case "sleep":
		ms, _ := strconv.Atoi(fs[1])
		time.Sleep(time.Duration(ms) * time.Millisecond)
	case "steady":
		f.stops = make(chan os.Signal, 1)
		signal.Notify(f.stops, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	case "wait":
		ch := f.stops
		if ch == nil {
			ch = make(chan os.Signal, 1)
			signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		}
		go func() {
			_, _ = bufio.NewReader(os.Stdin).ReadString(0)
		}()
		s := <-ch
		signal.Reset()
		_ = syscall.Kill(os.Getpid(), s.(syscall.Signal))
		time.Sleep(time.Second)
	case "exit":
		n, _ := strconv.Atoi(fs[1])
		return n, true
	case "die":
		n, _ := strconv.Atoi(fs[1])
		_ = syscall.Exec("/bin/sh", []string{"sh", "-c", "kill -" + strconv.Itoa(n) + " $$; sleep 5"}, os.Environ())
	}
	return 0, false
}

// hook runs the hooks.json commands of event with Codex's payload shape,
// through the user's shell as Codex does (codex.HookShell), and fails
// loudly if an answer is not JSON.
func (f *fake) hook(event, id string, extra map[string]any) {
	if f.quiet {
		return
	}
	data, err := os.ReadFile(filepath.Join(f.home, "hooks.json"))
	if err != nil {
		return
	}
	var cfg struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return
	}
	cwd, _ := os.Getwd()
	payload := map[string]any{"session_id": id, "transcript_path": f.rollout(id), "cwd": cwd, "hook_event_name": event}
	if event == "SessionEnd" {
		payload["reason"] = "other"
	}
	for k, v := range extra {
		if v != "" {
			payload[k] = v
		}
	}
	body, _ := json.Marshal(payload)
	for _, g := range cfg.Hooks[event] {
		for _, h := range g.Hooks {
			argv := codex.HookShell(os.Getenv, h.Command)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Stdin = strings.NewReader(string(body))
			start := time.Now()
			out, err := cmd.Output()
			if log := os.Getenv("FAKE_HOOK_LOG"); log != "" && cmd.ProcessState != nil {
				// event, wall and CPU (the hook's process: user + sys) in µs
				cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				if fh, ferr := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); ferr == nil {
					fmt.Fprintf(fh, "%s %d %d\n", event, time.Since(start).Microseconds(), cpu.Microseconds())
					fh.Close()
				}
			}
			var v any
			if err != nil || json.Unmarshal(out, &v) != nil {
				fmt.Fprintf(os.Stderr, "fake codex: hook %s failed: %v %q\n", event, err, out)
				os.Exit(70)
			}
		}
	}
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}
