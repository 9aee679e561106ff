// Package hookwire is how a hook's process reaches the hook host of its
// CX_HOME (hookserver): where the host listens, how a process names the
// build it runs, each event's budget, and the request, sent and read. It
// uses only the standard library's smallest packages (no net, no fmt, no
// encoding/json): the hook client (cmd/cx-hook) is built from it alone, so
// that the process Codex starts for each hook costs a third of cx's start.
//
// The wire: the hook's process writes a request (Request.Encode) and
// closes its side; the host answers with one byte — Taken, the hook is the
// host's to answer, or Refused, it is the process's own — and after Taken
// the answer's bytes, then closes.
package hookwire

import (
	"bufio"
	"errors"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"cx/internal/testpoint"
)

// The host's first byte.
const (
	Taken   = 'a'
	Refused = 'r'
)

// HostEnv set to "off" in a hook's environment keeps its hooks from the
// hook host: each is answered in its own process. "nostart": a host that
// runs answers it, but none is started for it (doctor's probe). "asked"
// tells cx that the hook client asked the host already, which did not
// take it.
const HostEnv = "CX_HOOK_HOST"

// StartsHost reports whether a hook with this environment may start a
// host when none runs.
func StartsHost(environ []string) bool {
	return Forwardable(environ) && !slices.Contains(environ, HostEnv+"=nostart")
}

// OwnEnv is why the hook client ran cx to answer a hook itself (Ask's
// reasons, or OwnOff): cx records it in the hook's audit line.
const OwnEnv = "CX_HOOK_OWN"

// OwnOff: the hook may not go to a host (Forwardable).
const OwnOff = "off"

// PPIDEnv and StartEnv are what the hook client tells the cx it runs
// (whose own parent is the client, started later): the hook's parent, the
// Codex that ran it, and when the hook's process started (Unix
// nanoseconds), from which its budget counts.
const (
	PPIDEnv  = "CX_HOOK_PPID"
	StartEnv = "CX_HOOK_START"
)

// FromClient is what the hook client told this process (PPIDEnv,
// StartEnv), read and taken out of its environment so nothing it starts
// inherits it: the hook's parent (else this process's parent) and its
// start (else own, this process's start; never later than own, nor more
// than 10 s before it).
func FromClient(own time.Time) (ppid int, start time.Time) {
	ppid, start = os.Getppid(), own
	if n, err := strconv.Atoi(os.Getenv(PPIDEnv)); err == nil && n > 1 {
		ppid = n
	}
	if ns, err := strconv.ParseInt(os.Getenv(StartEnv), 10, 64); err == nil {
		if t := time.Unix(0, ns); t.Before(own) && own.Sub(t) < 10*time.Second {
			start = t
		}
	}
	os.Unsetenv(PPIDEnv)
	os.Unsetenv(StartEnv)
	return ppid, start
}

// SetEnv is env with k set to v, whatever it held (a variable twice in an
// environment is read as its first).
func SetEnv(env []string, k, v string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

// MaxPayload is the most of a hook's input cx reads.
const MaxPayload = 16 << 20

// Budget is how long, from a hook's process start, cx may take before it
// answers anyway: well inside the timeout cx installs for the event
// (SessionEnd and Interrupt are clamped to 3 s by Codex, so they answer
// within 2.3 s whatever stdin does).
func Budget(event string) time.Duration {
	switch event {
	case "UserPromptSubmit":
		return 6 * time.Second
	case "SessionStart", "Stop", "PreCompact", "PostCompact":
		return 8 * time.Second
	}
	// SessionEnd, Interrupt, and anything not known: the tightest clamp.
	return 2300 * time.Millisecond
}

// Home is CX_HOME as cx finds it (config.Home) when the environment says:
// CX_HOME, else $HOME/.cx; "" when neither is set (cx then asks the
// passwd entry, which this package does not read).
func Home(getenv func(string) string) string {
	if v := getenv("CX_HOME"); v != "" {
		if abs, err := filepath.Abs(v); err == nil {
			return abs
		}
		return ""
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cx")
	}
	return ""
}

// SocketPath is where CX_HOME's hook host listens: in CX_HOME when the
// path fits a socket address (104 bytes on macOS), else a name made from
// CX_HOME in the temporary folder.
func SocketPath(home string) string {
	p := filepath.Join(home, "hooks.sock")
	if len(p) < 100 {
		return p
	}
	h := fnv.New64a()
	h.Write([]byte(home))
	return filepath.Join(os.TempDir(), "cx-"+strconv.Itoa(os.Getuid())+"-"+strconv.FormatUint(h.Sum64(), 16)+".sock")
}

// SweepLock is the file the background sweeper of CX_HOME home — the hook
// host — holds while it runs: one at a time.
func SweepLock(home string) string { return filepath.Join(home, "sweep.lock") }

// LockFDEnv names the descriptor a hook client hands the host it starts:
// the sweep lock, taken by the client and kept by the host, so no other
// hook starts one meanwhile.
const LockFDEnv = "CX_SWEEP_LOCK_FD"

// TakeSweepLock takes home's sweep lock if no one holds it: the file,
// locked, or nil. With the place taken, a socket there is a dead host's
// (a live one holds the place): it goes, so that a hook waiting for the
// host this starts (AwaitSocket) waits for it rather than asking the dead
// one.
func TakeSweepLock(home string) *os.File {
	f, err := os.OpenFile(SweepLock(home), os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		// A CX_HOME not made yet (the first hook ever): made as cx makes it.
		if os.MkdirAll(home, 0o700) == nil {
			f, err = os.OpenFile(SweepLock(home), os.O_RDWR|os.O_CREATE, 0o600)
		}
	}
	if err != nil {
		return nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil
	}
	_ = os.Remove(SocketPath(home))
	return f
}

// SweeperRunning reports whether a background sweeper of home holds its
// place (a probe: the lock is taken and dropped at once; false when there
// is no such file).
func SweeperRunning(home string) bool {
	f, err := os.OpenFile(SweepLock(home), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return err == syscall.EWOULDBLOCK
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// ReadyFDEnv names the other descriptor a hook client hands the host it
// starts: a pipe's write end, which the host closes once it listens (or
// as it leaves), so the client is woken then (AwaitReady) rather than
// finding the socket at its next look.
const ReadyFDEnv = "CX_HOST_READY_FD"

// AwaitReady waits up to d for the host a client started to listen, woken
// by ready (the read end of the pipe handed as ReadyFDEnv) closing, and
// reports whether it listens; with no pipe, it looks (AwaitSocket). It
// closes ready.
func AwaitReady(home string, ready *os.File, d time.Duration) bool {
	if ready == nil {
		return AwaitSocket(home, d)
	}
	defer ready.Close()
	if ready.SetReadDeadline(time.Now().Add(d)) != nil {
		return AwaitSocket(home, d)
	}
	var b [1]byte
	_, _ = ready.Read(b[:]) // EOF: the host listens, or left
	fi, err := os.Lstat(SocketPath(home))
	return err == nil && fi.Mode().Type() == os.ModeSocket
}

// AwaitSocket waits up to d for home's host to listen, and reports
// whether it does; it stops waiting when no one holds the sweep lock any
// more (the host could not start).
func AwaitSocket(home string, d time.Duration) bool {
	sock := SocketPath(home)
	for end, i := time.Now().Add(d), 0; ; i++ {
		if fi, err := os.Lstat(sock); err == nil && fi.Mode().Type() == os.ModeSocket {
			return true
		}
		if time.Now().After(end) || (i%4 == 0 && !SweeperRunning(home)) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Identity names a file by device, inode, size and time ("" when it
// cannot be read): a host takes only its own build's hooks, and sees its
// executable replaced (an upgrade).
func Identity(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	var dev, ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		dev, ino = uint64(st.Dev), uint64(st.Ino)
	}
	return strconv.FormatUint(dev, 10) + ":" + strconv.FormatUint(ino, 10) + ":" + strconv.FormatInt(fi.Size(), 10) + ":" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
}

// Forwardable reports whether a hook with this environment may go to the
// host: not when it is turned off, nor when a test names a fault of the
// hook's own process (testpoint.FaultPoints).
func Forwardable(environ []string) bool {
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if k == HostEnv && v == "off" {
			return false
		}
		if v != "" && slices.Contains(testpoint.FaultPoints, k) {
			return false
		}
	}
	return true
}

// SameSettings reports whether a hook's environment and the host's
// (getenv) give every test setting a hook's work reads
// (testpoint.HookSettings) the same value, unset and empty alike.
func SameSettings(environ []string, getenv func(string) string) bool {
	for _, k := range testpoint.HookSettings {
		v := ""
		for _, kv := range environ {
			if name, val, ok := strings.Cut(kv, "="); ok && name == k {
				v = val
			}
		}
		if v != getenv(k) {
			return false
		}
	}
	return true
}

// Request is one hook, as its process gives it to the host.
type Request struct {
	// Binary is the Identity of the cx the hook would run itself: another
	// build answers differently, so the host takes only its own's hooks.
	Binary string
	Event  string
	// ArgErr and ReadErr: the command line was refused, or the input could
	// not be read (the host records it and answers with a no-op).
	ArgErr, ReadErr string
	// Start is the hook's process start (Unix nanoseconds): its budget
	// counts from there, as Codex's timeout does.
	Start int64
	// PPID is the hook's parent: the Codex that ran it.
	PPID int
	// ClientCPU is what the hook's process used of the CPU (user and
	// system, microseconds) before it asked: the hook's cost is the
	// client's and the host's.
	ClientCPU int64
	// Env is the hook's environment, which Codex gave it: the run it
	// belongs to, Codex's home, the sinks' settings.
	Env     []string
	Payload []byte
	// Stop asks the host to stop taking hooks and leave.
	Stop bool
}

const magic = "cxhook2\n"

// Encode is r on the wire: a magic line, then each field as its length in
// decimal, a colon and its bytes.
func (r Request) Encode() []byte {
	n := len(magic) + len(r.Payload) + 128
	for _, e := range r.Env {
		n += len(e) + 8
	}
	b := make([]byte, 0, n)
	b = append(b, magic...)
	field := func(s string) { b = append(append(strconv.AppendInt(b, int64(len(s)), 10), ':'), s...) }
	stop := "0"
	if r.Stop {
		stop = "1"
	}
	for _, s := range []string{stop, r.Binary, r.Event, r.ArgErr, r.ReadErr, strconv.FormatInt(r.Start, 10), strconv.Itoa(r.PPID), strconv.FormatInt(r.ClientCPU, 10), strconv.Itoa(len(r.Env))} {
		field(s)
	}
	for _, e := range r.Env {
		field(e)
	}
	b = append(append(strconv.AppendInt(b, int64(len(r.Payload)), 10), ':'), r.Payload...)
	return b
}

// ErrRequest is a request that is not one.
var ErrRequest = errors.New("not a hook request")

// ReadRequest reads one request from r.
func ReadRequest(r *bufio.Reader) (Request, error) {
	var q Request
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(r, head); err != nil {
		return q, err
	}
	if string(head) != magic {
		return q, ErrRequest
	}
	next := func(max int) ([]byte, error) {
		s, err := r.ReadString(':')
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(strings.TrimSuffix(s, ":"))
		if err != nil || n < 0 || n > max {
			return nil, ErrRequest
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b, err
	}
	var f [9]string
	for i := range f {
		b, err := next(1 << 20)
		if err != nil {
			return q, err
		}
		f[i] = string(b)
	}
	q.Stop, q.Binary, q.Event, q.ArgErr, q.ReadErr = f[0] == "1", f[1], f[2], f[3], f[4]
	var err1, err2, err3, err4 error
	q.Start, err1 = strconv.ParseInt(f[5], 10, 64)
	q.PPID, err2 = strconv.Atoi(f[6])
	q.ClientCPU, err3 = strconv.ParseInt(f[7], 10, 64)
	envs, err4 := strconv.Atoi(f[8])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || envs < 0 || envs > 1<<16 {
		return q, ErrRequest
	}
	q.Env = make([]string, 0, envs)
	for range envs {
		b, err := next(1 << 20)
		if err != nil {
			return q, err
		}
		q.Env = append(q.Env, string(b))
	}
	p, err := next(MaxPayload)
	if err != nil {
		return q, err
	}
	q.Payload = p
	return q, nil
}

// Why no host took a hook (Ask): what the hook's own process records.
const (
	NoHost      = "no host"     // no socket (none runs, or one is starting)
	NotOurs     = "not ours"    // a socket of another user's
	Unreachable = "unreachable" // the socket refused the connection, or it timed out
	HostRefused = "refused"     // another build's host, other test settings, or one leaving
	NotTaken    = "not taken"   // not taken within TakeWait: hung, stopped or swamped
)

// Ask gives the hook to CX_HOME home's host. Taken (why is ""): out is
// what to print (its answer, or a no-op when none came before the
// deadline: the rollout keeps the rest, as for a hook out of time); not
// taken, why says why, and the hook is the asking process's to answer.
func Ask(home string, r Request, deadline time.Time) (out []byte, why string) {
	sock := SocketPath(home)
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode().Type() != os.ModeSocket {
		return nil, NoHost
	}
	// The hook's environment goes there: only to a socket of this user's.
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return nil, NotOurs
	}
	// A host takes a hook (its first byte) as soon as it has read it; one
	// that has not within TakeWait is hung or stopped, and the hook is its
	// own process's to answer, within its budget, rather than waiting all
	// of it for an answer that may never come.
	end := deadline.Add(150 * time.Millisecond)
	take := min(time.Until(end), TakeWait)
	fd, err := dial(sock, take)
	if err != nil {
		return nil, Unreachable
	}
	// The wait for the host is the runtime's poller's, not a blocking
	// read's: a hook waits for the host most of its life (tens of ms with
	// 16 sessions at once), and a goroutine blocked in a system call keeps
	// the scheduler's monitor waking every few microseconds, and has its
	// processor handed to a new thread, while one parked on the poller
	// leaves the process asleep.
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, Unreachable
	}
	f := os.NewFile(uintptr(fd), sock)
	defer f.Close()
	_ = f.SetDeadline(time.Now().Add(take))
	if _, err := f.Write(r.Encode()); err != nil {
		return nil, NotTaken
	}
	_ = syscall.Shutdown(fd, syscall.SHUT_WR)
	var first [1]byte
	if _, err := io.ReadFull(f, first[:]); err != nil {
		return nil, NotTaken
	}
	if first[0] != Taken {
		return nil, HostRefused
	}
	_ = f.SetReadDeadline(end)
	out, err = io.ReadAll(f)
	if err != nil || len(out) == 0 {
		return []byte("{}\n"), ""
	}
	return out, ""
}

// TakeWait is how long a hook waits for the host to take it (it takes a
// hook as soon as it has read it: a millisecond at rest, 200-500 ms with
// 16 sessions at once on 2 cores).
const TakeWait = 1500 * time.Millisecond

// SelfCPU is the CPU time (user and system) this process has used, in
// microseconds.
func SelfCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano()/1000 + ru.Stime.Nano()/1000
}

// StopHost asks CX_HOME home's hook host to leave and waits, up to d,
// until it has (its place is free): its hooks are answered by their own
// processes from then on. Tests call it before their CX_HOME is removed.
func StopHost(home string, d time.Duration) {
	if fd, err := dial(SocketPath(home), d); err == nil {
		f := os.NewFile(uintptr(fd), "hook host")
		_, _ = f.Write(Request{Stop: true}.Encode())
		_ = syscall.Shutdown(fd, syscall.SHUT_WR)
		_, _ = io.ReadAll(f)
		f.Close()
	}
	for end := time.Now().Add(d); SweeperRunning(home) && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
}

// dial connects a unix socket whose reads and writes give up after d.
func dial(sock string, d time.Duration) (int, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return -1, err
	}
	syscall.CloseOnExec(fd)
	if d <= 0 {
		d = time.Millisecond
	}
	tv := syscall.NsecToTimeval(d.Nanoseconds())
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}
