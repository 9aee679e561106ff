package hookwire

import (
	"bufio"
	"bytes"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What a hook's process sends is what the host reads, whatever bytes the
// fields hold (colons, newlines, digits, nothing).
func TestRequestRoundTrip(t *testing.T) {
	cases := []Request{
		{Binary: "1:2:3:4", Event: "Stop", Start: 1700000000123456789, PPID: 42, ClientCPU: 2100, Env: []string{"A=1", "B=x:y\nz", "C="}, Payload: []byte(`{"session_id":"s"}`)},
		{Event: "SessionEnd", ArgErr: "unknown event", ReadErr: "not closed", Env: []string{}, Payload: []byte{}},
		{Stop: true, Env: []string{}, Payload: []byte{}},
		{Event: "UserPromptSubmit", Env: []string{"K=" + strings.Repeat("v", 5000)}, Payload: bytes.Repeat([]byte("12:ab\n"), 10000)},
	}
	for i, want := range cases {
		got, err := ReadRequest(bufio.NewReader(bytes.NewReader(want.Encode())))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("case %d: read %+v, want %+v", i, got, want)
		}
	}
}

// A request cut short, or with a length past its bound, is an error.
func TestReadRequestRefusesBrokenInput(t *testing.T) {
	whole := Request{Event: "Stop", Env: []string{"A=1"}, Payload: []byte("{}")}.Encode()
	for n := 0; n < len(whole); n++ {
		if _, err := ReadRequest(bufio.NewReader(bytes.NewReader(whole[:n]))); err == nil {
			t.Errorf("a request cut at %d of %d bytes was read", n, len(whole))
		}
	}
	for _, bad := range []string{"cxhook2\n", magic + "-1:", magic + "x:", magic + strconv.Itoa(2<<20) + ":"} {
		if _, err := ReadRequest(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("%q was read", bad)
		}
	}
}

func TestForwardable(t *testing.T) {
	cases := []struct {
		env  []string
		want bool
	}{
		{[]string{"HOME=/h", "CX_RUN_ID=r"}, true},
		{[]string{"CX_TEST_OFF=pdeathsig"}, true}, // not a hook's setting
		{[]string{"CX_TEST_CLOCK="}, true},        // set empty: unset
		{[]string{HostEnv + "=off"}, false},
		{[]string{HostEnv + "=asked"}, true},
		{[]string{"CX_TEST_CRASH_AT=ended"}, false},
		{[]string{"CX_TEST_PANIC_AT=here"}, false},
		{[]string{"CX_TEST_CLOCK=1h"}, true}, // a setting: the host compares it with its own
	}
	for _, c := range cases {
		if got := Forwardable(c.env); got != c.want {
			t.Errorf("Forwardable(%q) = %v, want %v", c.env, got, c.want)
		}
	}
}

func TestSameSettings(t *testing.T) {
	host := map[string]string{"CX_TEST_BACKOFF": "200ms", "CX_TEST_LEASE": "10s"}
	cases := []struct {
		env  []string
		want bool
	}{
		{[]string{"CX_TEST_BACKOFF=200ms", "CX_TEST_LEASE=10s", "HOME=/h"}, true},
		{[]string{"CX_TEST_BACKOFF=200ms"}, false},                                          // the host's lease is not the hook's
		{[]string{"CX_TEST_BACKOFF=200ms", "CX_TEST_LEASE=10s", "CX_TEST_CLOCK=1h"}, false}, // nor its clock
		{[]string{"CX_TEST_BACKOFF=200ms", "CX_TEST_LEASE=10s", "CX_TEST_CLOCK="}, true},    // set empty: unset
	}
	for _, c := range cases {
		if got := SameSettings(c.env, func(k string) string { return host[k] }); got != c.want {
			t.Errorf("SameSettings(%q) = %v, want %v", c.env, got, c.want)
		}
	}
}

// A CX_HOME too deep for a socket address gets one in the temporary
// folder, the same each time, and another home another.
func TestSocketPath(t *testing.T) {
	if got := SocketPath("/home/u/.cx"); got != "/home/u/.cx/hooks.sock" {
		t.Errorf("short home: %s", got)
	}
	deep := "/" + strings.Repeat("d", 120)
	a, b := SocketPath(deep), SocketPath(deep+"x")
	if len(a) >= 100 || !strings.HasPrefix(a, os.TempDir()) || a != SocketPath(deep) || a == b {
		t.Errorf("deep homes: %s, %s", a, b)
	}
}

// The hook's parent and start are the client's when it ran cx (it says
// so), else cx's own; a start later than cx's, or long before it, is not
// taken; what the client said is not handed on.
func TestFromClient(t *testing.T) {
	own := time.Now()
	cases := []struct {
		ppid, start string
		wantPPID    int
		wantStart   time.Time
	}{
		{"4242", strconv.FormatInt(own.Add(-time.Second).UnixNano(), 10), 4242, own.Add(-time.Second)},
		{"", "", os.Getppid(), own},
		{"x", strconv.FormatInt(own.Add(time.Second).UnixNano(), 10), os.Getppid(), own},
		{"1", strconv.FormatInt(own.Add(-time.Minute).UnixNano(), 10), os.Getppid(), own},
	}
	for _, c := range cases {
		t.Setenv(PPIDEnv, c.ppid)
		t.Setenv(StartEnv, c.start)
		ppid, start := FromClient(own)
		if ppid != c.wantPPID || !start.Equal(c.wantStart) {
			t.Errorf("%q %q: %d %v, want %d %v", c.ppid, c.start, ppid, start, c.wantPPID, c.wantStart)
		}
		if _, ok := os.LookupEnv(PPIDEnv); ok {
			t.Errorf("%s is still set", PPIDEnv)
		}
	}
}

func TestSetEnv(t *testing.T) {
	got := SetEnv([]string{"A=1", "K=old", "B=2", "K=older"}, "K", "new")
	if want := []string{"A=1", "B=2", "K=new"}; !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}

// A host that does not take a hook (hung, stopped: here a socket no one
// accepts on, whose connections wait in its backlog) leaves it to the
// hook's own process after TakeWait, not after the hook's whole budget.
func TestAskGivesUpOnAHungHost(t *testing.T) {
	home, fd := homeWithSocket(t)
	defer syscall.Close(fd)
	if err := syscall.Listen(fd, 8); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, why := Ask(home, Request{Event: "Stop", Payload: []byte("{}")}, start.Add(Budget("Stop")))
	taken := why == ""
	took := time.Since(start)
	if taken || out != nil {
		t.Fatalf("a host that never took the hook: taken %v, %q", taken, out)
	}
	if took < TakeWait-50*time.Millisecond || took > TakeWait+time.Second {
		t.Fatalf("gave up after %v, want about TakeWait (%v), well within the budget (%v)", took, TakeWait, Budget("Stop"))
	}
}

// A host killed outright leaves its socket: asked, it is unreachable.
// The hook that takes the place to start a host clears it, so the hooks
// beside it wait for the new host (AwaitSocket) instead of asking the
// dead one and answering in their own processes.
func TestTakingThePlaceClearsADeadHostsSocket(t *testing.T) {
	home, fd := homeWithSocket(t)
	syscall.Close(fd) // the dead host's socket: its file stays, no one listens
	if _, why := Ask(home, Request{Event: "Stop"}, time.Now().Add(time.Second)); why != Unreachable {
		t.Fatalf("a dead host's socket asked: %q, want %q", why, Unreachable)
	}
	lock := TakeSweepLock(home)
	if lock == nil {
		t.Fatal("the place of a dead host was not free")
	}
	defer lock.Close()
	if AwaitSocket(home, 50*time.Millisecond) {
		t.Fatal("a hook waiting for the new host found the dead host's socket")
	}
	if _, why := Ask(home, Request{Event: "Stop"}, time.Now().Add(time.Second)); why != NoHost {
		t.Fatalf("asked while the new host starts: %q, want %q", why, NoHost)
	}
}

// homeWithSocket is a CX_HOME (short enough for a socket's path) with a
// socket bound at the host's place, not listening: the caller listens or
// closes it.
func homeWithSocket(t *testing.T) (home string, fd int) {
	t.Helper()
	home, err := os.MkdirTemp("", "cxw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	fd, err = syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: SocketPath(home)}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	return home, fd
}

// AwaitReady is woken by the pipe's close: it reports a host that
// listens, or at once one that left without listening, and gives up after
// its wait when the pipe stays open.
func TestAwaitReady(t *testing.T) {
	for _, c := range []struct {
		name    string
		listens bool // a socket in place when the pipe closes
		closes  bool
		want    bool
	}{
		{"listening", true, true, true},
		{"left without listening", false, true, false},
		{"pipe left open", false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if c.listens {
				fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer syscall.Close(fd)
				if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: SocketPath(home)}); err != nil {
					t.Fatal(err)
				}
			}
			if c.closes {
				time.AfterFunc(20*time.Millisecond, func() { w.Close() })
			}
			const wait = 300 * time.Millisecond
			start := time.Now()
			got := AwaitReady(home, r, wait)
			took := time.Since(start)
			if got != c.want {
				t.Fatalf("AwaitReady = %v, want %v", got, c.want)
			}
			if c.closes && took >= wait {
				t.Errorf("took %v: not woken by the close", took)
			}
			if !c.closes && took < wait {
				t.Errorf("gave up after %v, before its wait (%v)", took, wait)
			}
		})
	}
}
