package ovfake_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"cx/internal/ovclient"
	"cx/internal/testing/ovfake"
)

func start(t *testing.T, o ovfake.Options) *ovfake.Server {
	t.Helper()
	s, err := ovfake.StartWith(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func client(s *ovfake.Server, key string, timeout time.Duration) *ovclient.Client {
	return ovclient.New(ovclient.Settings{URL: s.URL, APIKey: key, Timeout: timeout})
}

func msgs(texts ...string) []ovclient.Message {
	var out []ovclient.Message
	for _, t := range texts {
		out = append(out, ovclient.Message{Role: "user", Parts: []ovclient.Part{{Type: "text", Text: t}}})
	}
	return out
}

// raw sends one request and returns the status and decoded body.
func raw(t *testing.T, s *ovfake.Server, method, path, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var v map[string]any
	json.Unmarshal(data, &v)
	return resp.StatusCode, v
}

func code(v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// The counters as openviking/session/session.py keeps them: a commit
// resets message_count at once, total_message_count never, and
// commit_count rises only when the background phase ends.
func TestCounters(t *testing.T) {
	s := start(t, ovfake.Options{Summarize: 150 * time.Millisecond})
	c := client(s, "", time.Second)
	ctx := context.Background()
	if _, err := c.Session(ctx, "x"); !errors.Is(err, ovclient.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	if n, err := c.AddMessages(ctx, "x", msgs("a", "b")); err != nil || n != 2 {
		t.Fatal(n, err)
	}
	info, _ := c.Session(ctx, "x")
	if info.MessageCount != 2 || info.TotalMessageCount == nil || *info.TotalMessageCount != 2 || info.CommitCount != 0 {
		t.Fatalf("before commit: %+v", info)
	}
	res, err := c.Commit(ctx, "x")
	if err != nil || res.Empty() || res.ArchiveURI != "viking://user/default/sessions/x/history/archive_001" {
		t.Fatalf("commit: %+v %v", res, err)
	}
	info, _ = c.Session(ctx, "x")
	if info.MessageCount != 0 || *info.TotalMessageCount != 2 || info.CommitCount != 0 {
		t.Fatalf("right after commit (background phase running): %+v", info)
	}
	if !s.Settle(10 * time.Second) {
		t.Fatal("the background phase never ended")
	}
	info, _ = c.Session(ctx, "x")
	if info.CommitCount != 1 {
		t.Fatalf("after the background phase: %+v", info)
	}
	if res, err := c.Commit(ctx, "x"); err != nil || !res.Empty() {
		t.Fatalf("a commit with nothing live: %+v %v", res, err)
	}
	if st, _ := s.Session("x"); len(st.Archives) != 1 || len(st.Messages) != 2 {
		t.Fatalf("server state: %+v", st)
	}
	// What the chaos checker reads: each archive's user texts, and every
	// session the server holds.
	if _, err := c.AddMessages(ctx, "x", msgs("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Commit(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddMessages(ctx, "y", msgs("d")); err != nil {
		t.Fatal(err)
	}
	if got := s.ArchiveUserTexts("x"); len(got) != 2 || strings.Join(got[0], ",") != "a,b" || strings.Join(got[1], ",") != "c" {
		t.Fatalf("archives' user texts: %q", got)
	}
	if got := strings.Join(s.UserTexts("x"), ","); got != "a,b,c" {
		t.Fatalf("user texts: %q", got)
	}
	if got := strings.Join(s.IDs(), ","); got != "x,y" {
		t.Fatalf("sessions: %q", got)
	}
}

// Error shapes, validation and routes (openviking/server/routers/sessions.py,
// error_mapping.py).
func TestErrorsAndValidation(t *testing.T) {
	s := start(t, ovfake.Options{})
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown session is HTTP 200 with an error", "GET", "/api/v1/sessions/nope?auto_create=false", "", 200, "NOT_FOUND"},
		{"role required", "POST", "/api/v1/sessions/x/messages", `{"content":"hi"}`, 400, "INVALID_ARGUMENT"},
		{"content or parts", "POST", "/api/v1/sessions/x/messages", `{"role":"user"}`, 400, "INVALID_ARGUMENT"},
		{"peer_id pattern", "POST", "/api/v1/sessions/x/messages", `{"role":"user","content":"hi","peer_id":"a b"}`, 400, "INVALID_ARGUMENT"},
		{"unknown part type", "POST", "/api/v1/sessions/x/messages", `{"role":"user","parts":[{"type":"image"}]}`, 400, "INVALID_ARGUMENT"},
		{"batch over 100", "POST", "/api/v1/sessions/x/messages/batch", `{"messages":[` + strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"a"},`, 101), ",") + `]}`, 400, "INVALID_ARGUMENT"},
		{"commit of an unknown session", "POST", "/api/v1/sessions/nope/commit", `{}`, 404, "NOT_FOUND"},
		{"known path, other method", "GET", "/api/v1/sessions/x/commit", "", 405, "UNKNOWN"},
		{"unknown route", "GET", "/api/v2/nothing", "", 404, "NOT_FOUND"},
	}
	for _, c := range cases {
		st, v := raw(t, s, c.method, c.path, c.body)
		if st != c.status || code(v) != c.code || v["status"] != "error" || v["result"] != nil {
			t.Errorf("%s: HTTP %d %v", c.name, st, v)
		}
		if c.status == 400 {
			d, _ := v["error"].(map[string]any)["details"].(map[string]any)
			if d["validation_errors"] == nil {
				t.Errorf("%s: no validation_errors: %v", c.name, v)
			}
		}
	}
	if st, _ := s.Session("x"); len(st.Messages) != 0 {
		t.Fatalf("an invalid message was stored: %+v", st)
	}
	// A status outside the documented set is stored, as the server would,
	// and noted as outside the contract.
	raw(t, s, "POST", "/api/v1/sessions/x/messages", `{"role":"assistant","parts":[{"type":"tool","tool_status":"incomplete"}]}`)
	if v := s.Violations(); len(v) != 1 || !strings.Contains(v[0], "incomplete") {
		t.Fatalf("violations: %v", v)
	}
}

// Auth (openviking/server/auth.py): X-API-Key wins over the bearer; a ROOT
// key may not act on sessions; identity headers are refused in api_key mode
// and required in trusted mode.
func TestAuth(t *testing.T) {
	s := start(t, ovfake.Options{APIKey: "user-key", RootKey: "root-key"})
	p := "/api/v1/sessions/x?auto_create=false"
	cases := []struct {
		header []string
		code   string
	}{
		{[]string{"X-API-Key", "user-key", "Authorization", "Bearer wrong"}, "NOT_FOUND"},
		{[]string{"X-API-Key", "wrong", "Authorization", "Bearer user-key"}, "UNAUTHENTICATED"},
		{[]string{"Authorization", "Bearer user-key"}, "NOT_FOUND"},
		{nil, "UNAUTHENTICATED"},
		{[]string{"X-API-Key", "root-key"}, "PERMISSION_DENIED"},
		{[]string{"X-API-Key", "user-key", "X-OpenViking-Account", "acme"}, "PERMISSION_DENIED"},
		{[]string{"X-API-Key", "user-key", "X-OpenViking-User", "ana"}, "PERMISSION_DENIED"},
	}
	for _, c := range cases {
		if _, v := raw(t, s, "GET", p, "", c.header...); code(v) != c.code {
			t.Errorf("%v: %v, want %s", c.header, v, c.code)
		}
	}
	if st, v := raw(t, s, "GET", "/health", ""); st != 200 || v["healthy"] != true || v["result"] != nil {
		t.Errorf("health (no auth, not enveloped): %d %v", st, v)
	}
	tr := start(t, ovfake.Options{Trusted: true})
	if _, v := raw(t, tr, "GET", p, ""); code(v) != "INVALID_ARGUMENT" {
		t.Errorf("trusted without identity: %v", v)
	}
	if _, v := raw(t, tr, "GET", p, "", "X-OpenViking-Account", "a", "X-OpenViking-User", "u"); code(v) != "NOT_FOUND" {
		t.Errorf("trusted with identity: %v", v)
	}
}

// The overview (get_session_context): live messages spend the budget
// first; a ~1,000-word overview only comes with a budget that still fits it.
func TestOverviewBudget(t *testing.T) {
	s := start(t, ovfake.Options{Summarize: time.Millisecond})
	c := client(s, "", time.Second)
	ctx := context.Background()
	c.AddMessages(ctx, "x", msgs("first"))
	c.Commit(ctx, "x")
	s.Settle(10 * time.Second)
	c.AddMessages(ctx, "x", msgs(strings.Repeat("live words ", 500)))
	small, err := c.Overview(ctx, "x", 2000)
	if err != nil || small != "" {
		t.Fatalf("budget 2000 kept the overview: %q %v", small, err)
	}
	big, _ := c.Overview(ctx, "x", ovclient.OverviewBudget)
	if !strings.Contains(big, "archive_001") || len(strings.Fields(big)) < 1000 {
		t.Fatalf("budget %d: %d words", ovclient.OverviewBudget, len(strings.Fields(big)))
	}
}

// The session lock held past the client's timeout: the client gives up,
// the server does the work afterwards.
func TestStallDoesTheWorkAfterTheClientGaveUp(t *testing.T) {
	s := start(t, ovfake.Options{})
	s.Inject(ovfake.Fault{Route: "/messages", Stall: 300 * time.Millisecond})
	_, err := client(s, "", 100*time.Millisecond).AddMessages(context.Background(), "x", msgs("a"))
	if !ovclient.Unanswered(err) {
		t.Fatalf("want an unanswered request, got %v", err)
	}
	if st, _ := s.Session("x"); len(st.Messages) != 0 {
		t.Fatal("stored before the lock freed")
	}
	if !s.Settle(10 * time.Second) {
		t.Fatal("the stalled request never finished")
	}
	if st, _ := s.Session("x"); len(st.Messages) != 1 {
		t.Fatalf("not stored after the lock freed: %+v", st)
	}
}

// A legacy server: no total, no batch route (the client falls back to one
// message at a time), no auto-commit setting; auto-commit on a current one.
func TestLegacyAndAutoCommit(t *testing.T) {
	ctx := context.Background()
	old := start(t, ovfake.Options{Legacy: true})
	c := client(old, "", time.Second)
	if n, err := c.AddMessages(ctx, "x", msgs("a", "b")); err != nil || n != 2 {
		t.Fatal(n, err)
	}
	if info, _ := c.Session(ctx, "x"); info.TotalMessageCount != nil || info.MessageCount != 2 {
		t.Fatalf("legacy info: %+v", info)
	}
	if ac, err := c.Prepare(ctx, "x", true); err != nil || ac != ovclient.AutoCommitUnsupported {
		t.Fatal(ac, err)
	}
	cur := start(t, ovfake.Options{AutoCommitAfter: 2})
	c = client(cur, "", time.Second)
	c.AddMessages(ctx, "auto", msgs("a", "b"))
	if st, _ := cur.Session("auto"); st.ServerCommits != 1 || st.Live != 0 {
		t.Fatalf("auto-commit: %+v", st)
	}
	if ac, err := c.Prepare(ctx, "fresh", false); err != nil || ac != ovclient.AutoCommitOff {
		t.Fatal(ac, err)
	}
	c.AddMessages(ctx, "fresh", msgs("a", "b", "c"))
	if st, _ := cur.Session("fresh"); st.ServerCommits != 0 || st.Live != 3 {
		t.Fatalf("auto-commit off: %+v", st)
	}
}

// The client sends the account and user only where the server takes them:
// not to an api_key server (its key is the identity), yes to a trusted one.
func TestClientIdentityHeaders(t *testing.T) {
	ctx := context.Background()
	for _, o := range []ovfake.Options{{APIKey: "k"}, {Trusted: true}} {
		s := start(t, o)
		c := ovclient.New(ovclient.Settings{URL: s.URL, APIKey: "k", Account: "acme", User: "ana", Timeout: time.Second})
		if n, err := c.AddMessages(ctx, "x", msgs("a")); err != nil || n != 1 {
			t.Fatalf("%+v: %d %v", o, n, err)
		}
		for _, r := range s.Requests() {
			sent := r.Header.Get("X-OpenViking-Account") == "acme" && r.Header.Get("X-OpenViking-User") == "ana"
			if r.Path != "/health" && sent != o.Trusted {
				t.Fatalf("%+v: identity headers sent=%v on %s", o, sent, r.Path)
			}
		}
	}
}
