package lifecycle_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cx/internal/openviking/ovfake"
)

func ovEnv(t *testing.T, extra ...string) (*env, *ovfake.Server) {
	t.Helper()
	ov, err := ovfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ov.Close)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("sinks = [\"local\", \"openviking\"]\n[openviking]\nurl = \""+ov.URL+"\"\ntimeout = \"500ms\"\napi_key_env = \"CX_TEST_OV_KEY\"\n[lifecycle]\nmax_attempts = 3\n"), 0o600)
	ov.APIKey = "k-123"
	e := newEnv(t, append([]string{"CX_CONFIG=" + cfg, "CX_TEST_OV_KEY=k-123", "CX_TEST_BACKOFF=10ms", "HOME=" + t.TempDir()}, extra...)...)
	return e, ov
}

// messagesOf returns the user texts the fake received for a session, in order.
func userTexts(ov *ovfake.Server, id string) []string {
	s, _ := ov.Session("cx-" + id)
	var out []string
	for _, m := range s.Messages {
		var msg struct {
			Role  string                  `json:"role"`
			Parts []struct{ Text string } `json:"parts"`
		}
		json.Unmarshal(m, &msg)
		if msg.Role == "user" {
			out = append(out, msg.Parts[0].Text)
		}
	}
	return out
}

func TestOpenVikingHappyPath(t *testing.T) {
	t.Parallel()
	e, ov := ovEnv(t)
	e.run("start A; hook SessionStart A startup; turn A one; turn A two; exit 0")
	e.want("A", "committed", "exit", 1, 1)
	s, _ := ov.Session("cx-A")
	if got := strings.Join(userTexts(ov, "A"), ","); got != "one,two" || s.Commits != 1 || len(s.Messages) != 4 {
		t.Fatalf("server has users %q, %d messages, %d commits", got, len(s.Messages), s.Commits)
	}
	for _, r := range ov.Requests() {
		if r.Header.Get("Authorization") != "Bearer k-123" || r.Header.Get("X-API-Key") != "k-123" {
			t.Fatalf("request without the API key: %s %s", r.Method, r.Path)
		}
		if strings.Contains(string(r.Body), "k-123") {
			t.Fatal("the API key leaked into a body")
		}
	}
}

// Stop appends the new turns while the session is live; the end commits.
func TestOpenVikingAppendsOnStop(t *testing.T) {
	t.Parallel()
	e, ov := ovEnv(t)
	cmd := e.cxCmd("start A; hook SessionStart A startup; turn A one; turn A two; wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "turns on the server while live", func() bool { return len(userTexts(ov, "A")) == 2 })
	if s, _ := ov.Session("cx-A"); s.Commits != 0 {
		t.Fatal("committed while live")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	runWait(cmd, 30*time.Second)
	e.want("A", "committed", "signal:TERM", 1, 1)
	s, _ := ov.Session("cx-A")
	if got := strings.Join(userTexts(ov, "A"), ","); got != "one,two" || s.Commits != 1 {
		t.Fatalf("after end: users %q commits %d", got, s.Commits)
	}
}

// Every fault of the contract: nothing lost, nothing sent twice, the job's
// state visible meanwhile.
func TestOpenVikingFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		fault  ovfake.Fault
		down   bool
		parked bool // not retryable: parked until `cx ctl retry`
	}{
		{name: "refused", down: true},
		{name: "slow past timeout", fault: ovfake.Fault{Route: "/commit", Delay: 1500 * time.Millisecond}},
		{name: "lost answer", fault: ovfake.Fault{Route: "/commit", Status: 500, AfterOK: true}},
		{name: "429", fault: ovfake.Fault{Route: "/messages", Status: 429}},
		{name: "500", fault: ovfake.Fault{Route: "/commit", Status: 500}},
		{name: "503", fault: ovfake.Fault{Route: "/messages", Status: 503, Count: 2}},
		{name: "409 retryable", fault: ovfake.Fault{Route: "/commit", Status: 409, Retryable: true}},
		{name: "404 on commit", fault: ovfake.Fault{Route: "/commit", Status: 404}, parked: true},
		{name: "412", fault: ovfake.Fault{Route: "/commit", Status: 412}, parked: true},
		{name: "401", fault: ovfake.Fault{Route: "/messages", Status: 401}, parked: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, ov := ovEnv(t)
			if c.down {
				ov.Down()
			} else {
				ov.Inject(c.fault)
			}
			e.run("start A; hook SessionStart A startup; turn A one; turn A two; exit 0")
			// The job's state is visible meanwhile (a background sweeper may
			// still hold it for a moment).
			var out string
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				out, _ = e.ctl("status", "--json")
				var st struct {
					Pending []struct {
						State     string `json:"state"`
						LastError string `json:"last_error"`
					} `json:"pending_jobs"`
					Parked []struct {
						LastError string `json:"last_error"`
					} `json:"parked_jobs"`
				}
				json.Unmarshal([]byte(out), &st)
				if c.parked && len(st.Parked) > 0 && st.Parked[0].LastError != "" {
					break
				}
				if !c.parked && (e.sessions()["A"].Status == "committed" || (len(st.Pending) > 0 && st.Pending[0].State == "pending" && st.Pending[0].LastError != "")) {
					break
				}
				if time.Now().Add(50 * time.Millisecond).After(deadline) {
					t.Fatalf("the job's state is not visible:\n%s", out)
				}
			}
			if c.down {
				if err := ov.Up(); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(1600 * time.Millisecond) // a slow answer finishes; backoffs pass
			if c.parked {
				e.ctl("retry", "--all")
			}
			for i := 0; i < 5 && e.sessions()["A"].Status != "committed"; i++ {
				e.ctl("sweep")
				time.Sleep(100 * time.Millisecond)
			}
			e.want("A", "committed", "exit", 1, 1)
			s, _ := ov.Session("cx-A")
			if got := strings.Join(userTexts(ov, "A"), ","); got != "one,two" || s.Commits != 1 {
				t.Fatalf("server: users %q (each turn once?), %d commits (want 1)", got, s.Commits)
			}
		})
	}
}

// A crash at each step of sending: the sweep finishes with each turn and
// the commit sent once.
func TestOpenVikingCrashWhileSending(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"sending", "committing"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			e, ov := ovEnv(t, "CX_TEST_LEASE=1s")
			e.run("start A; hook SessionStart A startup; turn A one; exit 0", "CX_SINKS=local")
			e.want("A", "committed", "exit", 1, 1)
			// The same session resumed in a run with OpenViking, ended by a
			// commit that crashes mid-send.
			e.run("start A; hook SessionStart A resume; turn A two; exit 0", "CX_TEST_CRASH_AT="+point)
			time.Sleep(1100 * time.Millisecond)
			e.ctl("sweep")
			e.ctl("sweep")
			s, _ := ov.Session("cx-A")
			if got := strings.Join(userTexts(ov, "A"), ","); got != "one,two" || s.Commits != 1 {
				t.Fatalf("after a crash at %s: users %q, %d commits", point, got, s.Commits)
			}
		})
	}
}

// The exec sink: the session-end JSON, field by field.
func TestExecSink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "payload.json")
	script := filepath.Join(dir, "sink.sh")
	os.WriteFile(script, []byte("#!/bin/sh\ncat > "+out+"\n"), 0o755)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte("sinks = [\"exec\"]\n[exec]\ncommand = [\""+script+"\"]\ntimeout = \"5s\"\n[lifecycle]\nmax_attempts = 3\n"), 0o600)
	e := newEnv(t, "CX_CONFIG="+cfg)
	e.run("start A; hook SessionStart A startup; turn A work; exit 5")
	e.want("A", "committed", "exit", 1, 1)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	st := e.sessions()["A"]
	want := map[string]any{"session_id": "A", "hook_event_name": "SessionEnd", "reason": "other", "end_reason": "exit",
		"generation": float64(1), "run_id": st.RunID, "exit_status": float64(5), "cwd": e.w}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %v, want %v", k, p[k], v)
		}
	}
	if tp, _ := p["transcript_path"].(string); !strings.HasSuffix(tp, "-A.jsonl") {
		t.Errorf("transcript_path %v", p["transcript_path"])
	}
	// A failing command is retried, then parked with its error.
	os.WriteFile(script, []byte("#!/bin/sh\necho broken >&2\nexit 3\n"), 0o755)
	e2 := newEnv(t, "CX_CONFIG="+cfg, "CX_TEST_BACKOFF=10ms")
	e2.run("start B; hook SessionStart B startup; turn B work; exit 0")
	for i := 0; i < 25; i++ {
		time.Sleep(20 * time.Millisecond)
		e2.ctl("sweep")
	}
	status, _ := e2.ctl("status")
	if !strings.Contains(status, "parked jobs: 1") || !strings.Contains(status, "broken") {
		t.Fatalf("status:\n%s", status)
	}
}

// A resume after a commit is given the server's archive overview.
func TestOpenVikingOverviewOnResume(t *testing.T) {
	t.Parallel()
	e, ov := ovEnv(t)
	e.run("start A; hook SessionStart A startup; turn A design the cache; exit 0")
	e.want("A", "committed", "exit", 1, 1)
	rollouts, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*-A.jsonl"))
	out, _ := e.hook("SessionStart", map[string]any{"session_id": "A", "hook_event_name": "SessionStart", "source": "resume", "cwd": e.w, "transcript_path": rollouts[0]})
	var ans struct {
		Out struct {
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	json.Unmarshal([]byte(out), &ans)
	if !strings.Contains(ans.Out.Context, "Archive overview: 1 archives") || !strings.Contains(ans.Out.Context, "viking://session/cx-A/history") {
		t.Fatalf("resume context lacks the OpenViking overview:\n%s", out)
	}
	if len(ov.Requests()) == 0 {
		t.Fatal("no request")
	}
}
