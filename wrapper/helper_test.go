package wrapper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	cxproc "cx/internal/proc"
	"cx/internal/testing/codextest"
)

// The test binary plays two parts besides running tests: a fake child
// (WRAPPER_TEST_ROLE=child) and a supervisor that runs wrapper.Run with a
// spec from its environment (WRAPPER_TEST_ROLE=supervisor). Real processes,
// real signals, real PTYs.
func TestMain(m *testing.M) {
	if IsLeader() {
		os.Exit(LeaderMain(os.Args[1:]))
	}
	switch os.Getenv("WRAPPER_TEST_ROLE") {
	case "child":
		os.Exit(childMain(os.Args[1:]))
	case "supervisor":
		os.Exit(supervisorMain())
	}
	// The lifeline alone keeps children from outliving their supervisor, as
	// on macOS: Linux's parent-death signal is off unless a test turns it on.
	os.Setenv("CX_TEST_OFF", "pdeathsig")
	os.Exit(m.Run())
}

// supervisorMain runs the child named by SUP_CHILD (a fake-child behaviour
// and its arguments) under wrapper.Run, writes the Exit to SUP_RESULT, and
// exits with its code.
func supervisorMain() int {
	ms, _ := strconv.Atoi(os.Getenv("SUP_GRACE_MS"))
	interval, _ := strconv.Atoi(os.Getenv("SUP_INTERVAL_MS"))
	killAfter, _ := strconv.Atoi(os.Getenv("SUP_KILLAFTER_MS"))
	mode := ModeAuto
	switch os.Getenv("SUP_MODE") {
	case "pty":
		mode = ModePTY
	case "pipe":
		mode = ModePipe
	}
	env := append(os.Environ(), "WRAPPER_TEST_ROLE=child")
	spec := Spec{
		Path: os.Args[0],
		Args: strings.Fields(os.Getenv("SUP_CHILD")),
		Env:  env,
		Mode: mode,
		Stop: StopPolicy{
			Keys:       []byte(os.Getenv("SUP_KEYS")),
			Grace:      time.Duration(ms) * time.Millisecond,
			Interval:   time.Duration(interval) * time.Millisecond,
			KillAfter:  time.Duration(killAfter) * time.Millisecond,
			CloseStdin: os.Getenv("SUP_CLOSE_STDIN") == "1",
		},
		Observer: &fileObserver{path: os.Getenv("SUP_RESULT")},
	}
	if p := os.Getenv("SUP_PATH"); p != "" {
		spec.Path = p
	}
	if os.Getenv("SUP_NO_LEADER") != "1" {
		spec.Leader = os.Args[0] // as cx runs: job control through a session leader
	}
	if in, out := os.Getenv("SUP_TAP_IN"), os.Getenv("SUP_TAP_OUT"); in != "" {
		ft := &fileTap{}
		ft.in, _ = os.Create(in)
		ft.out, _ = os.Create(out)
		spec.Tap = ft
	}
	ex, err := Run(context.Background(), spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
	}
	return ex.Code
}

// fileTap writes what it sees to two files (the tap's own copy).
type fileTap struct{ in, out *os.File }

func (t *fileTap) FromParent(b []byte) { t.in.Write(b) }
func (t *fileTap) FromChild(b []byte)  { t.out.Write(b) }

type result struct {
	Mode     string `json:"mode"`
	Pid      int    `json:"pid"`
	Code     int    `json:"code"`
	Signal   int    `json:"signal"`
	Received string `json:"received"`
	StartErr string `json:"start_err"`
	CPUMs    int64  `json:"cpu_ms"`
}

type fileObserver struct {
	path string
	r    result
}

func (o *fileObserver) Started(pid int, m Mode) {
	o.r.Pid, o.r.Mode = pid, m.String()
	o.write()
}

func (o *fileObserver) Exited(ex Exit) {
	o.r.Code, o.r.Signal, o.r.CPUMs = ex.Code, int(ex.Signal), ex.CPU.Milliseconds()
	if ex.Received != nil {
		o.r.Received = SignalName(ex.Received)
	}
	if ex.StartErr != nil {
		o.r.StartErr = ex.StartErr.Error()
	}
	o.write()
}

func (o *fileObserver) write() {
	if o.path == "" {
		return
	}
	data, _ := json.Marshal(o.r)
	_ = os.WriteFile(o.path+".tmp", data, 0o600)
	_ = os.Rename(o.path+".tmp", o.path)
}

// childMain is the fake child. Behaviours:
//
//	exit N          exit with status N
//	spin MS         use MS milliseconds of CPU, then exit 0
//	die SIG         die of signal SIG (a number)
//	hang            print "ready PID" and sleep
//	echo-signals    print "ready PID", then "sig NAME" for each stop signal (ignored)
//	size            print "size R C" of its terminal now and on every SIGWINCH
//	cat             copy stdin to stdout until EOF, then "done" on stderr
//	slow-echo       read stdin to EOF, wait 300ms, print "got <input>"
//	hold-pty        start a grandchild that keeps the terminal open, print "bye", exit 0
//	raw-keys LOG    raw mode; log each input byte and stop signal (ignored) to LOG;
//	                with CHILD_EXIT_ON_KEY=1 exit 0 at the first byte
//	spew N          write N bytes of output and exit
//	tstp-self       print "ready"; on the input line "z" raise SIGTSTP on itself (as Codex does on
//	                Ctrl+Z), print "resumed" when continued; exit 0 on the line "q"
//	eof-exit        log stop signals (ignored) to stderr; at EOF on stdin print "eof" there and exit 0
func childMain(args []string) int {
	if len(args) == 0 {
		return 99
	}
	out := os.Stdout
	switch args[0] {
	case "exit":
		n, _ := strconv.Atoi(args[1])
		return n
	case "die":
		// The Go runtime turns some signals (QUIT) into its own exit; a shell
		// in this same process dies of the signal by its default action.
		_ = syscall.Exec("/bin/sh", []string{"sh", "-c", "kill -" + args[1] + " $$; sleep 5"}, os.Environ())
		return 98
	case "spin":
		ms, _ := strconv.Atoi(args[1])
		for cxproc.SelfCPU() < time.Duration(ms)*time.Millisecond {
		}
		return 0
	case "hang":
		fmt.Fprintf(out, "ready %d\n", os.Getpid())
		time.Sleep(time.Hour)
	case "tstp-self":
		cont := make(chan os.Signal, 1)
		signal.Notify(cont, syscall.SIGCONT)
		fmt.Fprintln(out, "ready")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			switch strings.TrimSpace(sc.Text()) {
			case "z":
				_ = syscall.Kill(os.Getpid(), syscall.SIGTSTP)
				select {
				case <-cont:
					fmt.Fprintln(out, "resumed")
				case <-time.After(2 * time.Second):
					fmt.Fprintln(out, "not stopped")
				}
			case "q":
				return 0
			}
		}
		return 3
	case "eof-exit":
		ch := make(chan os.Signal, 8)
		signal.Notify(ch, StopSignals...)
		go func() {
			for s := range ch {
				fmt.Fprintf(os.Stderr, "sig %s\n", SignalName(s))
			}
		}()
		fmt.Fprintf(os.Stderr, "ready %d\n", os.Getpid())
		_, _ = io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, "eof")
		return 0
	case "echo-signals":
		ch := make(chan os.Signal, 8)
		signal.Notify(ch, StopSignals...)
		fmt.Fprintf(out, "ready %d\n", os.Getpid())
		for s := range ch {
			fmt.Fprintf(out, "sig %s\n", SignalName(s))
		}
	case "size":
		ch := make(chan os.Signal, 8)
		signal.Notify(ch, syscall.SIGWINCH)
		printSize := func() {
			ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
			if err != nil {
				fmt.Fprintf(out, "size error %v\r\n", err)
				return
			}
			fmt.Fprintf(out, "size %d %d\r\n", ws.Row, ws.Col)
		}
		printSize()
		for range ch {
			printSize()
		}
	case "cat":
		_, err := io.Copy(out, os.Stdin)
		fmt.Fprintln(os.Stderr, "done", err)
	case "slow-echo":
		in, _ := io.ReadAll(os.Stdin)
		time.Sleep(300 * time.Millisecond)
		fmt.Fprintf(out, "got %s", in)
	case "hold-pty":
		gc := exec.Command(os.Args[0], "hang")
		gc.Stdin, gc.Stdout, gc.Stderr = os.Stdin, os.Stdout, os.Stderr
		gc.Env = os.Environ()
		if err := gc.Start(); err != nil {
			return 97
		}
		fmt.Fprintf(out, "grandchild %d\r\nbye\r\n", gc.Process.Pid)
		return 0
	case "raw-keys":
		log, err := os.OpenFile(args[1], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return 96
		}
		var mu sync.Mutex
		logf := func(format string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(log, format+"\n", a...)
		}
		cooked, err := term.MakeRaw(0)
		if err != nil {
			return 95
		}
		ch := make(chan os.Signal, 8)
		signal.Notify(ch, StopSignals...)
		go func() {
			for s := range ch {
				logf("sig %s", SignalName(s))
			}
		}()
		fmt.Fprintf(out, "ready %d\r\n", os.Getpid())
		buf := make([]byte, 64)
		for {
			n, err := os.Stdin.Read(buf)
			for _, b := range buf[:n] {
				logf("key %02x", b)
				if os.Getenv("CHILD_EXIT_ON_KEY") == "1" {
					return 0
				}
				if os.Getenv("CHILD_SLOW_QUIT_ON_KEY") == "1" {
					// Codex quitting: its terminal back to cooked mode, then
					// a while shutting down before it exits.
					_ = term.Restore(0, cooked)
					time.Sleep(1500 * time.Millisecond)
					return 0
				}
			}
			if err != nil {
				time.Sleep(time.Hour)
			}
		}
	case "spew":
		n, _ := strconv.Atoi(args[1])
		chunk := bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-+\n"), 512)
		for n > 0 {
			c := chunk
			if n < len(c) {
				c = c[:n]
			}
			w, err := out.Write(c)
			if err != nil {
				return 1
			}
			n -= w
		}
		return 0
	}
	return 0
}

// syncBuffer collects a stream for assertions while it is still being written.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	ch  chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{ch: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	select {
	case b.ch <- struct{}{}:
	default:
	}
	return n, err
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the buffer contains s, failing the test after d.
func (b *syncBuffer) waitFor(t *testing.T, s string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for !strings.Contains(b.String(), s) {
		select {
		case <-b.ch:
		case <-deadline:
			t.Fatalf("timed out after %v waiting for %q; have:\n%s", d, s, b.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// proc is a supervisor process started by a test.
type proc struct {
	cmd    *exec.Cmd
	result string
	done   chan struct{}
	err    error
}

func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		t.Fatalf("supervisor did not exit within %v", d)
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) res(t *testing.T) result {
	t.Helper()
	var r result
	data, err := os.ReadFile(p.result)
	if err != nil {
		t.Fatalf("read supervisor result: %v", err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("parse supervisor result %q: %v", data, err)
	}
	return r
}

// childPid waits until the supervisor has reported its child's pid.
func (p *proc) childPid(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(p.result); err == nil {
			var r result
			if json.Unmarshal(data, &r) == nil && r.Pid > 0 {
				return r.Pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("supervisor never reported its child's pid")
	return 0
}

// watchmanUp waits until the supervisor's watchman (pipe mode) runs.
func (p *proc) watchmanUp(t *testing.T) {
	t.Helper()
	codextest.AwaitWatchman(t, p.cmd.Process.Pid)
}

type supOpts struct {
	mode      string // pty | pipe | ""
	child     string // fake-child behaviour and args
	keys      string
	grace     time.Duration
	interval  time.Duration
	killAfter time.Duration
	env       []string
	stdin     *os.File
	stdout    *os.File
	stderr    *os.File
	ctty      bool // make stdin the supervisor's controlling terminal (PTY tests)
}

func startSupervisor(t *testing.T, o supOpts) *proc {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(),
		"WRAPPER_TEST_ROLE=supervisor",
		"SUP_MODE="+o.mode,
		"SUP_CHILD="+o.child,
		"SUP_KEYS="+o.keys,
		"SUP_GRACE_MS="+strconv.Itoa(int(o.grace/time.Millisecond)),
		"SUP_INTERVAL_MS="+strconv.Itoa(int(o.interval/time.Millisecond)),
		"SUP_KILLAFTER_MS="+strconv.Itoa(int(o.killAfter/time.Millisecond)),
		"SUP_RESULT="+dir+"/result.json",
	)
	cmd.Env = append(cmd.Env, o.env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.stdin, o.stdout, o.stderr
	if o.ctty {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start supervisor: %v", err)
	}
	p := &proc{cmd: cmd, result: dir + "/result.json", done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool { return cxproc.Alive(pid, 0) }

// procState is the one-letter state of pid ("S", "T", …), "" if gone.
func procState(pid int) string {
	st, err := cxproc.ReadStat(pid)
	if err != nil {
		return ""
	}
	return string(st.State)
}

// eventually polls cond until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
