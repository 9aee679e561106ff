// Command cx-hook is the process Codex starts for each hook cx installs
// (`cx-hook <event>`, beside cx): it gives the event to its CX_HOME's hook
// host and prints the host's answer; when none runs it starts one and is
// its first hook. When no host takes it (one that did not listen in time,
// another build's, a test setting) it runs `cx ctl hook <event>` beside it,
// which answers it. It is
// built from internal/hookwire alone, so its start costs a third of cx's:
// with many sessions at once, a hook's process is most of a hook's cost.
package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"cx/internal/hookwire"
)

func main() { os.Exit(run()) }

// noop is the answer that changes nothing: what Codex gets when nothing
// else can be given in time.
const noop = "{}\n"

func run() int {
	start := time.Now()
	cx := "cx"
	if exe, err := os.Executable(); err == nil {
		cx = filepath.Join(filepath.Dir(exe), "cx")
	}
	if len(os.Args) != 2 || len(os.Args[1]) == 0 || os.Args[1][0] == '-' {
		// Not an event: cx's handler says what is wrong (or, asked, what
		// this is).
		return runCX(cx, append([]string{"ctl", "hook"}, os.Args[1:]...), nil, false, os.Environ())
	}
	event := os.Args[1]
	deadline := start.Add(hookwire.Budget(event))
	payload, readErr := readInput(os.Stdin, time.Until(deadline)-200*time.Millisecond)
	if os.Getenv("CX_HOOKS_OFF") == "1" {
		os.Stdout.WriteString(noop)
		return 0
	}
	env := os.Environ()
	why := hookwire.OwnOff // why this hook is its own process's: cx records it
	if hookwire.Forwardable(env) {
		if home := hookwire.Home(os.Getenv); home != "" {
			req := hookwire.Request{Binary: hookwire.Identity(cx), Event: event, Start: start.UnixNano(), PPID: os.Getppid(), Env: env, Payload: payload}
			if readErr != nil {
				req.ReadErr = readErr.Error()
			}
			hung := false // a host that would not take the hook: not asked again
			ask := func() bool {
				req.ClientCPU = hookwire.SelfCPU()
				asked := time.Now()
				out, w := hookwire.Ask(home, req, deadline)
				if why = w; why == "" {
					os.Stdout.Write(out)
				}
				hung = why != "" && time.Since(asked) >= hookwire.TakeWait
				return why == ""
			}
			if ask() {
				return 0
			}
			// A host this hook starts, with the place it took: the hook is
			// its first.
			startThenAsk := func(lock *os.File) bool {
				return hookwire.AwaitReady(home, startHost(cx, env, lock), hostStartWait) && ask()
			}
			// No host took it. With none, this hook takes the host's place
			// and starts one with it (no other hook starts one meanwhile),
			// and is its first: one cx process, not the host and this
			// hook's own cx beside it; cx answers it when the host does not
			// listen in time. One that is starting (its place taken, no
			// socket yet) is waited for: a start is cheaper than this
			// hook's own cx, and many sessions' first hooks come at once.
			if !hookwire.StartsHost(env) {
				// asked not to start one (doctor's probe)
			} else if lock := hookwire.TakeSweepLock(home); lock != nil {
				if startThenAsk(lock) {
					return 0
				}
				why += ", starting one"
			} else if !hung && hookwire.AwaitSocket(home, hostStartWait) && ask() {
				return 0
			} else if lock := hookwire.TakeSweepLock(home); lock != nil {
				// The host left meanwhile (idle, or its ledger replaced):
				// this hook starts the next.
				if startThenAsk(lock) {
					return 0
				}
				why += ", starting one"
			}
		}
		if hookwire.StartsHost(env) {
			env = hookwire.SetEnv(env, hookwire.HostEnv, "asked")
		}
	}
	if readErr != nil {
		os.Stdout.WriteString(noop)
		return 0
	}
	// cx's parent is this process: it is told the hook's, and its start.
	env = hookwire.SetEnv(hookwire.SetEnv(env, hookwire.PPIDEnv, strconv.Itoa(os.Getppid())), hookwire.StartEnv, strconv.FormatInt(start.UnixNano(), 10))
	env = hookwire.SetEnv(env, hookwire.OwnEnv, why)
	return runCX(cx, []string{"ctl", "hook", event}, payload, true, env)
}

// hostStartWait is how long a hook waits for a host that is starting.
const hostStartWait = time.Second

// startHost starts CX_HOME's hook host (`cx ctl sweep --background
// --hooks`) in a session of its own, handing it the sweep lock (its
// descriptor 3) and the write end of a pipe it closes once it listens
// (descriptor 4, hookwire.ReadyFDEnv), and lets it go. It returns the
// pipe's read end (nil without one: the host is looked for); the host is
// quietly not started when it cannot be (cx answers this hook either way,
// and starts one after it).
func startHost(cx string, env []string, lock *os.File) (ready *os.File) {
	defer lock.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil
	}
	defer null.Close()
	files := []*os.File{null, null, null, lock}
	env = append(env, hookwire.LockFDEnv+"=3")
	r, w, err := os.Pipe()
	if err == nil {
		defer w.Close() // the host's copy is the one left: its close is the sign
		files = append(files, w)
		env = append(env, hookwire.ReadyFDEnv+"=4")
	}
	p, err := os.StartProcess(cx, []string{cx, "ctl", "sweep", "--background", "--hooks"}, &os.ProcAttr{Env: env,
		Files: files, Sys: &syscall.SysProcAttr{Setsid: true}})
	if err != nil {
		if r != nil {
			r.Close()
		}
		return nil
	}
	p.Release()
	return r
}

// readInput reads r up to hookwire.MaxPayload bytes, giving up after d (a
// hook must answer even when its input never closes).
type readResult struct {
	b   []byte
	err error
}

func readInput(r io.Reader, d time.Duration) ([]byte, error) {
	ch := make(chan readResult, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, hookwire.MaxPayload))
		ch <- readResult{b, err}
	}()
	t := time.NewTimer(d)
	select {
	case res := <-ch:
		return res.b, res.err
	case <-t.C:
		return nil, errNotClosed
	}
}

type constErr string

func (e constErr) Error() string { return string(e) }

const errNotClosed = constErr("hook input not closed within its budget")

// runCX runs cx with args and returns its exit status: its stdin is
// payload when pipe (a hook: Codex gets a no-op answer when cx cannot
// run), else this process's.
func runCX(cx string, args []string, payload []byte, pipe bool, env []string) int {
	stdin := os.Stdin
	var w *os.File
	if pipe {
		r, pw, err := os.Pipe()
		if err != nil {
			os.Stdout.WriteString(noop)
			return 0
		}
		defer r.Close()
		stdin, w = r, pw
	}
	p, err := os.StartProcess(cx, append([]string{cx}, args...), &os.ProcAttr{Env: env, Files: []*os.File{stdin, os.Stdout, os.Stderr}})
	if err != nil {
		os.Stderr.WriteString("cx-hook: " + err.Error() + "\n")
		if w != nil {
			w.Close()
			os.Stdout.WriteString(noop)
			return 0
		}
		return 1
	}
	if w != nil {
		go func() { w.Write(payload); w.Close() }()
	}
	st, err := p.Wait()
	if err != nil {
		return 1
	}
	return st.ExitCode()
}
