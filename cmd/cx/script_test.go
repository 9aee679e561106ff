package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"cx/internal/hookwire"
	_ "cx/internal/ledger"
	"cx/internal/testing/codextest"
)

// -update rewrites the golden sections of testdata/script/*.txtar from
// what cx printed.
var updateScripts = flag.Bool("update", false, "rewrite the golden output in testdata/script")

// scriptCommands are helpers the scripts run as programs (the test binary
// under another name).
var scriptCommands = map[string]func() int{
	"cxtest-lockdb":    lockDBMain,
	"cxtest-htmlproxy": htmlProxyMain,
}

// The rollout the scripts use: a real 0.169 `codex exec` with tool calls.
const (
	scriptSession = "01a200e2-3ee2-72f3-aa24-7574f709737a"
	scriptRollout = "../../testdata/rollouts/0.169.0/exec-tools.jsonl"
)

// TestScripts runs every `cx ctl` command as a user does — a real cx
// process in a fresh HOME, CX_HOME and CODEX_HOME — and compares what it
// prints, text and --json, with the golden output in testdata/script.
func TestScripts(t *testing.T) {
	cx := codextest.CX(t)
	rollout, err := os.ReadFile(scriptRollout)
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *updateScripts,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			work := env.WorkDir
			bin := filepath.Join(work, ".bin")
			home := filepath.Join(work, "home")
			codexHome := filepath.Join(home, ".codex")
			sessions := filepath.Join(codexHome, "sessions", "2026", "11", "22")
			for _, d := range []string{bin, sessions} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			if err := os.Symlink(cx, filepath.Join(bin, "cx")); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(bin, "codex"), []byte(scriptFakeCodex), 0o755); err != nil {
				return err
			}
			rp := filepath.Join(sessions, "rollout-2026-11-22T01-32-37-"+scriptSession+".jsonl")
			if err := os.WriteFile(rp, rollout, 0o600); err != nil {
				return err
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			for name := range scriptCommands {
				if err := os.Symlink(self, filepath.Join(bin, name)); err != nil {
					return err
				}
			}
			env.Setenv("PATH", bin+":/usr/bin:/bin")
			env.Setenv("HOME", home)
			env.Setenv("CODEX_HOME", codexHome)
			env.Setenv("CX_HOME", filepath.Join(home, ".cx"))
			// The hook host a script's hooks started leaves before $WORK goes.
			env.Defer(func() { hookwire.StopHost(filepath.Join(home, ".cx"), 10*time.Second) })
			env.Setenv("TZ", "UTC")
			env.Setenv("LC_ALL", "C")
			env.Setenv("SID", scriptSession)
			env.Setenv("ROLLOUT", rp)
			// A 0.128 rollout (Codex without writer locks) a script may add.
			src128, err := filepath.Abs(filepath.Join(filepath.Dir(filepath.Dir(scriptRollout)), "0.128.0", "exec-tools.jsonl"))
			if err != nil {
				return err
			}
			env.Setenv("ROLLOUT128SRC", src128)
			// Real 0.171 rollouts of Codex's own structure (subagents, a goal).
			structure, err := filepath.Abs(filepath.Join(filepath.Dir(filepath.Dir(scriptRollout)), "0.171.0"))
			if err != nil {
				return err
			}
			env.Setenv("STRUCTURE", structure)
			env.Setenv("SESSIONS", sessions)
			env.Setenv("CXVERSION", builtVersion(t, cx))
			env.Setenv("CXBIN", cx)
			// A script that mounts a file system here (a read-only or full
			// CX_HOME) leaves none behind, whatever way it ends.
			env.Defer(func() { _ = exec.Command("umount", "-l", filepath.Join(work, "mnt")).Run() })
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"sanitize": cmdSanitize,
			"expand":   cmdExpand,
			"jsonhas":  cmdJSONHas,
			"exits":    cmdExits,
			"payload":  cmdPayload,
			"nobytes":  cmdNoBytes,
			"waitfile": cmdWaitFile,
		},
	})
}

// builtVersion is what `cx ctl version` says of the cx under test.
func builtVersion(t *testing.T, cx string) string {
	out, err := exec.Command(cx, "ctl", "version", "--json").Output()
	if err != nil {
		t.Fatalf("cx ctl version --json: %v", err)
	}
	var v struct{ Version string }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	return v.Version
}

// scriptFakeCodex stands in for Codex 0.128 (no hook trust step), so
// install, doctor and version run without the real one; the real one is
// the e2e tests' business.
const scriptFakeCodex = `#!/bin/sh
case "$1" in
--version) echo "codex-cli 0.128.0"; exit 0 ;;
--help) printf 'Codex CLI\n\nCommands:\n  exec  Run Codex non-interactively\n  resume  Resume\n\nOptions:\n  -c, --config <key=value>\n          Override\n  -h, --help\n          Print help\n'; exit 0 ;;
esac
echo "fake codex: $*"
`

var sanitizers = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "TIME"},
	{regexp.MustCompile(`\brun-[0-9a-f]{16}\b`), "run-ID"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ms|µs|ns)\b`), "DUR"},
	{regexp.MustCompile(`\bpid \d+ codex \d+\b`), "pid PID codex PID"},
	{regexp.MustCompile(`\bfrom codex \d+@\d+\b`), "from codex PID"},
	{regexp.MustCompile(`\bpid[= ]\d+\b`), "pid PID"},
	{regexp.MustCompile(`("(?:codex_)?pid": )\d+`), "${1}PID"},
}

// cmdSanitize writes a normalised copy of stdout, stderr or a file — the
// work directory as $WORK, times as TIME, run ids, durations and pids
// replaced — so `cmp` can hold it against golden output:
//
//	sanitize stdout out.txt
func cmdSanitize(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sanitize stdout|stderr|FILE OUT")
	}
	text := ts.ReadFile(args[0])
	text = strings.ReplaceAll(text, ts.Getenv("WORK"), "$WORK")
	if v := ts.Getenv("CXBIN"); v != "" {
		text = strings.ReplaceAll(text, v, "$CX")
	}
	if v := ts.Getenv("CXVERSION"); v != "" {
		text = strings.ReplaceAll(text, v, "VERSION")
	}
	for _, s := range sanitizers {
		text = s.re.ReplaceAllString(text, s.repl)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(text), 0o644))
}

// cmdWaitFile waits for a file to exist — an event a background process
// signals — for at most 30 seconds:
//
//	waitfile $WORK/started
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: no %s after 30s", args[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdExits runs a program like exec and checks its exact exit status
// (exec only knows zero and non-zero):
//
//	exits 2 cx ctl show
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS…]")
	}
	var want int
	if _, err := fmt.Sscan(args[0], &want); err != nil {
		ts.Fatalf("exits: %q is not a status", args[0])
	}
	err := ts.Exec(args[1], args[2:]...)
	got := 0
	if ee, ok := err.(*exec.ExitError); ok {
		got = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// cmdPayload writes a Stop hook payload for $SID whose assistant message is
// BYTES long and carries SECRET in the middle (a 10 MiB payload, say):
//
//	payload OUT BYTES SECRET
func cmdPayload(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: payload OUT BYTES SECRET")
	}
	var n int
	if _, err := fmt.Sscan(args[1], &n); err != nil {
		ts.Fatalf("payload: %v", err)
	}
	half := strings.Repeat("x", n/2)
	msg := half + " " + args[2] + " " + half
	b, _ := json.Marshal(map[string]any{"session_id": ts.Getenv("SID"), "transcript_path": ts.Getenv("ROLLOUT"),
		"cwd": "/home/user/cx-e2e/project", "hook_event_name": "Stop", "turn_id": "t-big", "stop_hook_active": false,
		"last_assistant_message": msg})
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o644))
}

// cmdExpand writes FILE with $VARS expanded from the script's environment:
//
//	expand payload.json payload.out
func cmdExpand(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: expand IN OUT")
	}
	text := os.Expand(ts.ReadFile(args[0]), ts.Getenv)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(text), 0o644))
}

// cmdJSONHas checks that stdout is one valid JSON document (and, with a
// key, that its top-level object has it):
//
//	jsonhas stdout [KEY…]
func cmdJSONHas(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: jsonhas stdout|FILE [KEY…]")
	}
	var v any
	err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &v)
	if neg {
		if err == nil {
			ts.Fatalf("%s is valid JSON", args[0])
		}
		return
	}
	if err != nil {
		ts.Fatalf("%s is not one JSON document: %v", args[0], err)
	}
	obj, _ := v.(map[string]any)
	for _, k := range args[1:] {
		if _, ok := obj[k]; !ok {
			ts.Fatalf("%s has no key %q", args[0], k)
		}
	}
}

// cmdNoBytes fails if any file under DIR holds TEXT in its bytes — a
// database's free pages, its WAL and shm included — naming each file and
// how many copies it holds ("gone means gone from the bytes"):
//
//	nobytes TEXT DIR
func cmdNoBytes(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: nobytes TEXT DIR")
	}
	text := []byte(args[0])
	var found []string
	err := filepath.WalkDir(ts.MkAbs(args[1]), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if n := bytes.Count(data, text); n > 0 {
			found = append(found, fmt.Sprintf("%s: %d", p, n))
		}
		return nil
	})
	if err != nil {
		ts.Fatalf("nobytes: %v", err)
	}
	if len(found) > 0 {
		ts.Fatalf("%q is still in the bytes of:\n%s", text, strings.Join(found, "\n"))
	}
}

// lockDBMain holds a write lock on $CX_HOME/cx.db until killed or for
// $LOCK_FOR (default 60s) or SIGINT: "a locked ledger" for the scripts.
func lockDBMain() int {
	path := filepath.Join(os.Getenv("CX_HOME"), "cx.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.WriteFile(path+".locked", nil, 0o600); err != nil {
		return 1
	}
	d, err := time.ParseDuration(os.Getenv("LOCK_FOR"))
	if err != nil {
		d = time.Minute
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	select {
	case <-time.After(d):
	case <-sig: // `kill -INT`: a clean end the script can wait for
	}
	return 0
}

// htmlProxyMain answers every request on 127.0.0.1 the way a proxy in
// front of a down server does — 502 and an HTML page — and writes its URL
// to the file named by its argument; it stops at SIGINT.
func htmlProxyMain() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	page := "<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n"
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, page)
	})}
	go func() { _ = srv.Serve(ln) }()
	if err := os.WriteFile(os.Args[1], []byte("http://"+ln.Addr().String()), 0o600); err != nil {
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
	return 0
}
