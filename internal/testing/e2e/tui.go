package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"cx/internal/codex"
	"cx/internal/proc"
)

// TUI is cx (and so Codex's interactive TUI) running in a tmux pane of its
// own tmux server, the way a person runs it in a terminal.
type TUI struct {
	h    *H
	dir  string
	sock string
	// pid and start are cx's process (the pane's sh that execs it) and
	// its start time, read once cx.pid is written: a pid alone names
	// whatever holds it later (pids wrap within minutes on a busy machine).
	pid       int
	start     uint64
	closeOnce sync.Once
}

// Ready matches the screen of an idle Codex TUI waiting for a prompt.
var Ready = regexp.MustCompile(`(?m)^› |Ask Codex to do anything|send a message|for shortcuts`)

// newTUI makes a TUI's directory and quotes `cx args…` for a shell.
func (h *H) newTUI(args []string) (*TUI, string, []string) {
	h.T.Helper()
	return h.newTUIOf(h.CX, args)
}

func (h *H) newTUIOf(bin string, args []string) (*TUI, string, []string) {
	h.T.Helper()
	dir, err := os.MkdirTemp(h.Root, "t")
	if err != nil {
		h.T.Fatal(err)
	}
	quoted := []string{shellQuote(bin)}
	for _, a := range args {
		quoted = append(quoted, shellQuote(a))
	}
	return &TUI{h: h, dir: dir, sock: filepath.Join(dir, "s")}, dir, quoted
}

// StartInShell runs `cx args…` from an interactive bash with job control
// in a fresh terminal, as a user does; the shell's prompt is "cx-shell$ ".
func (h *H) StartInShell(args ...string) *TUI {
	h.T.Helper()
	tu, dir, quoted := h.newTUI(args)
	cmd := exec.Command("tmux", "-S", tu.sock, "-f", "/dev/null", "new-session", "-d", "-s", "cx", "-x", "120", "-y", "40",
		"env PS1='cx-shell$ ' bash --norc --noprofile -i")
	cmd.Env = h.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		h.T.Fatalf("start tmux: %v\n%s", err, out)
	}
	h.T.Cleanup(tu.Close)
	tu.watch()
	tu.WaitFor(ShellPrompt, 20*time.Second)
	line := fmt.Sprintf(`cd %s && sh -c 'echo $$ > %s/cx.pid.tmp && mv %s/cx.pid.tmp %s/cx.pid && exec "$@"' sh %s; echo "cx-exit=$?"`,
		shellQuote(h.Work), dir, dir, dir, strings.Join(quoted, " "))
	if _, err := tu.tmux("send-keys", "-t", "cx", "-l", line); err != nil {
		h.T.Fatal(err)
	}
	tu.Keys("Enter")
	tu.notePid(tu.waitFile("cx.pid", 20*time.Second))
	return tu
}

// ShellPrompt matches the prompt of StartInShell's shell.
var ShellPrompt = regexp.MustCompile(`(?m)^cx-shell\$\s*$`)

// StartTUI runs `cx args…` in a fresh terminal (120×40) in the project and
// waits until the pane's script has recorded cx's pid.
func (h *H) StartTUI(args ...string) *TUI {
	h.T.Helper()
	return h.startTUIOf(h.CX, args)
}

// StartDirectTUI runs the same Codex without cx (`codex args…`) in a fresh
// terminal, as StartTUI runs cx: a user's plain Codex, with cx's hooks.
func (h *H) StartDirectTUI(args ...string) *TUI {
	h.T.Helper()
	return h.startTUIOf(h.Codex.Native, args)
}

func (h *H) startTUIOf(bin string, args []string) *TUI {
	h.T.Helper()
	tu, dir, quoted := h.newTUIOf(bin, args)
	// The pane records the terminal state around cx, cx's pid (the sh that
	// execs cx), and cx's exit status; then it stays open for inspection.
	script := fmt.Sprintf(`cd %[1]s || exit 1
stty -g > %[2]s/stty.before.tmp && mv %[2]s/stty.before.tmp %[2]s/stty.before
sh -c 'echo $$ > %[2]s/cx.pid.tmp && mv %[2]s/cx.pid.tmp %[2]s/cx.pid && exec "$@"' sh %[3]s
echo $? > %[2]s/exit.tmp && mv %[2]s/exit.tmp %[2]s/exit
stty -g > %[2]s/stty.after.tmp && mv %[2]s/stty.after.tmp %[2]s/stty.after
exec sleep 3600
`, shellQuote(h.Work), dir, strings.Join(quoted, " "))
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte(script), 0o700); err != nil {
		h.T.Fatal(err)
	}
	cmd := exec.Command("tmux", "-S", tu.sock, "-f", "/dev/null", "new-session", "-d", "-s", "cx", "-x", "120", "-y", "40",
		"sh "+filepath.Join(dir, "run.sh"))
	cmd.Env = h.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		h.T.Fatalf("start tmux: %v\n%s", err, out)
	}
	h.T.Cleanup(tu.Close)
	tu.watch()
	tu.notePid(tu.waitFile("cx.pid", 20*time.Second))
	return tu
}

// watch ends the terminal's tmux server (and so what runs in it: cx
// sees its terminal close) once this test process is gone without its
// cleanup — killed by `go test -timeout`, whose panic runs no Cleanup.
// The watcher is a shell in a session of its own, so it outlives us.
func (tu *TUI) watch() {
	script := fmt.Sprintf(`while kill -0 %d 2>/dev/null; do sleep 2; done; tmux -S %s kill-server 2>/dev/null`, os.Getpid(), shellQuote(tu.sock))
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // none of a harness's CX_HOME: it is no cx process of the test
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err == nil {
		go cmd.Wait() // reaped if it ends while we live (the server is gone)
	}
}

// notePid keeps cx's pid and start time, while the process is surely cx.
func (tu *TUI) notePid(pid string) {
	if n, err := strconv.Atoi(strings.TrimSpace(pid)); err == nil {
		tu.pid, tu.start = n, proc.StartTime(n)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (tu *TUI) tmux(args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", tu.sock}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Screen is what the terminal shows now.
func (tu *TUI) Screen() string {
	out, err := tu.tmux("capture-pane", "-p", "-t", "cx")
	if err != nil {
		return "(capture-pane failed: " + err.Error() + ")"
	}
	return out
}

// WaitFor waits until the screen matches re, failing with the screen shown.
func (tu *TUI) WaitFor(re *regexp.Regexp, d time.Duration) {
	tu.h.T.Helper()
	deadline := time.Now().Add(d)
	for {
		s := tu.Screen()
		if re.MatchString(s) {
			return
		}
		if time.Now().After(deadline) {
			tu.h.T.Fatalf("timed out after %v waiting for %q; screen:\n%s", d, re, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitText waits for literal text on the screen.
func (tu *TUI) WaitText(s string, d time.Duration) {
	tu.h.T.Helper()
	tu.WaitFor(regexp.MustCompile(regexp.QuoteMeta(s)), d)
}

// WaitReady waits for the idle prompt.
func (tu *TUI) WaitReady() {
	tu.h.T.Helper()
	tu.WaitFor(Ready, 60*time.Second)
}

// WaitIdle waits until Codex runs no turn: its composer is drawn while a
// turn works too (Ready), beside "esc to interrupt".
func (tu *TUI) WaitIdle() {
	tu.h.T.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for strings.Contains(tu.Screen(), "esc to interrupt") {
		if time.Now().After(deadline) {
			tu.h.T.Fatalf("Codex still working after 60s; screen:\n%s", tu.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Type types text literally, then presses Enter. Codex reads a burst of
// characters as a paste and keeps an Enter that comes with it as a
// newline; on a loaded machine the characters and an Enter sent 300 ms
// later can still be read together (issue 23's CI failure). So Enter
// waits until Codex has drawn the text in its composer — it has read the
// characters — and then the paste window; it is pressed again while the
// composer still holds the text.
func (tu *TUI) Type(text string) {
	tu.h.T.Helper()
	if _, err := tu.tmux("send-keys", "-t", "cx", "-l", text); err != nil {
		tu.h.T.Fatalf("send-keys: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(tu.Screen(), text) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // past Codex's paste-burst window
	tu.Keys("Enter")
	for i := 0; i < 5; i++ {
		time.Sleep(500 * time.Millisecond)
		if composerLine(tu.Screen()) != "› "+text {
			return
		}
		tu.Keys("Enter")
	}
}

// composerLine is the last line that starts with the prompt marker: the
// composer, when Codex is idle.
func composerLine(screen string) string {
	lines := strings.Split(screen, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimRight(lines[i], " "); strings.HasPrefix(strings.TrimLeft(l, " "), "› ") {
			return strings.TrimLeft(l, " ")
		}
	}
	return ""
}

// Keys sends tmux key names (Enter, C-c, C-d, Escape, Down…).
func (tu *TUI) Keys(keys ...string) {
	tu.h.T.Helper()
	if _, err := tu.tmux(append([]string{"send-keys", "-t", "cx"}, keys...)...); err != nil {
		tu.h.T.Fatalf("send-keys %v: %v", keys, err)
	}
}

// Prompt types a prompt and waits for the model's turn to finish: the text
// want on screen and the prompt idle again.
func (tu *TUI) Prompt(text, want string) {
	tu.h.T.Helper()
	tu.Type(text)
	tu.WaitText(want, 60*time.Second)
	tu.WaitReady()
}

// Slash runs a slash command such as /exit, pressing Enter again when the
// first Enter only closed the command popup (seen on 0.128).
func (tu *TUI) Slash(cmd string) {
	tu.h.T.Helper()
	tu.Type(cmd)
	if cmd == "/exit" || cmd == "/quit" {
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if tu.Exited() {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !tu.Exited() {
			tu.Keys("Enter")
		}
	}
}

func (tu *TUI) waitFile(name string, d time.Duration) string {
	tu.h.T.Helper()
	deadline := time.Now().Add(d)
	for {
		if data, err := os.ReadFile(filepath.Join(tu.dir, name)); err == nil {
			return strings.TrimSpace(string(data))
		}
		if time.Now().After(deadline) {
			tu.h.T.Fatalf("timed out after %v waiting for %s; screen:\n%s", d, name, tu.Screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CXPid is cx's pid.
func (tu *TUI) CXPid() int {
	tu.h.T.Helper()
	pid, err := strconv.Atoi(tu.waitFile("cx.pid", 10*time.Second))
	if err != nil {
		tu.h.T.Fatal(err)
	}
	return pid
}

// CodexPid is the pid of the Codex process cx started (below cx's session
// leader, a copy of cx, in PTY mode).
func (tu *TUI) CodexPid() int {
	tu.h.T.Helper()
	pid := tu.CXPid()
	cxExe, _ := filepath.EvalSymlinks(tu.h.CX)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cs := RunChildren(pid); len(cs) > 0 {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", cs[0])); exe != cxExe {
				return cs[0]
			}
			pid = cs[0] // the leader: Codex is its child
			continue
		}
		time.Sleep(50 * time.Millisecond)
	}
	tu.h.T.Fatalf("cx %d has no Codex below it", tu.CXPid())
	return 0
}

// RunChildren is pid's children but a shell: the ones a run's cx keeps
// (its session leader, Codex), without the shell through which it starts
// the hook host apart from itself (proc.StartApart), there for a few ms.
func RunChildren(pid int) []int {
	var out []int
	for _, c := range Children(pid) {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", c))
		switch filepath.Base(exe) {
		case "sh", "dash", "bash":
			continue
		}
		out = append(out, c)
	}
	return out
}

// Children lists pid's child processes.
func Children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		data, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// Alive reports whether pid is a live (non-zombie) process.
func Alive(pid int) bool { return proc.Alive(pid, 0) }

// Signal sends sig to pid (a process this test started).
func (tu *TUI) Signal(pid int, sig syscall.Signal) {
	tu.h.T.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		tu.h.T.Fatalf("kill %d %v: %v", pid, sig, err)
	}
}

// Exited reports whether cx has exited (the pane recorded its status).
func (tu *TUI) Exited() bool {
	_, err := os.Stat(filepath.Join(tu.dir, "exit"))
	return err == nil
}

// WaitExit waits for cx to exit and returns its status.
func (tu *TUI) WaitExit(d time.Duration) int {
	tu.h.T.Helper()
	n, err := strconv.Atoi(tu.waitFile("exit", d))
	if err != nil {
		tu.h.T.Fatal(err)
	}
	return n
}

// Stty returns the terminal settings recorded before cx started and after it
// exited.
func (tu *TUI) Stty() (before, after string) {
	tu.h.T.Helper()
	return tu.waitFile("stty.before", 5*time.Second), tu.waitFile("stty.after", 10*time.Second)
}

// Close ends the tmux server and any process of this TUI still running,
// once: a later call (the test's cleanup, minutes on) must not kill
// whatever holds cx's pid by then — on Linux a thread of this very test
// binary can, and kill(2) of a thread's id kills its whole process (a
// 20-minute chaos run's test binary died so at its end).
func (tu *TUI) Close() { tu.closeOnce.Do(tu.close) }

func (tu *TUI) close() {
	var pids []int
	if tu.pid != 0 && tu.start != 0 && proc.Alive(tu.pid, tu.start) {
		pids = append(pids, Children(tu.pid)...)
		pids = append(pids, tu.pid)
	}
	_, _ = tu.tmux("kill-server")
	for _, p := range pids {
		if Alive(p) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

var whereToRun = regexp.MustCompile(`Where should the new conversation run\?`)

// New runs /new and waits for the new thread.
func (tu *TUI) New() {
	tu.h.T.Helper()
	tu.NewThread("/new")
}

// NewThread runs /new or /clear and waits until Codex has opened the new
// thread — it logs a thread id it had not logged before — then for the
// idle prompt. The idle prompt alone does not tell:
// on a loaded machine the old thread's prompt is still on screen while the
// command waits to be read, and a prompt typed then goes to the old thread
// (seen in CI on 0.128). Inside a git repository 0.169's /new first asks
// where the new conversation should run: it is answered with the current
// worktree.
func (tu *TUI) NewThread(cmd string) {
	tu.h.T.Helper()
	w := codex.NewLogWatch(tu.h.CodexHome, time.Time{}) // from the first row: the threads it logged before too
	defer w.Close()
	pid := tu.CodexPid()
	known := tu.loggedThreads(w, pid)
	tu.Type(cmd)
	if cmd == "/new" && codex.CompareVersions(tu.h.Codex.Version, "0.169.0") >= 0 {
		tu.WaitFor(whereToRun, 20*time.Second)
		tu.Keys("Enter")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		for id := range tu.loggedThreads(w, pid) {
			if !known[id] {
				tu.WaitReady()
				return
			}
		}
		if time.Now().After(deadline) {
			tu.h.T.Fatalf("%s opened no new thread in 30s (threads before: %v); screen:\n%s", cmd, known, tu.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var loggedThread = regexp.MustCompile(`thread_id=([0-9a-f-]{36})`)

// loggedThreads are the thread ids Codex (pid) has logged so far: 0.169
// logs them in its logs database, 0.128's TUI only in log/codex-tui.log.
func (tu *TUI) loggedThreads(w *codex.LogWatch, pid int) map[string]bool {
	ids := map[string]bool{}
	for _, id := range w.Threads(pid) {
		ids[id] = true
	}
	data, _ := os.ReadFile(filepath.Join(tu.h.CodexHome, "log", "codex-tui.log"))
	for _, m := range loggedThread.FindAllSubmatch(data, -1) {
		ids[string(m[1])] = true
	}
	return ids
}
