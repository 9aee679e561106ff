package openviking

import (
	"context"
	"strings"
	"testing"
	"time"

	"cx/internal/config"
	"cx/internal/testing/ovfake"
)

// The OpenViking half of per-prompt recall, against the fake server (its
// find route follows the server's router): leaf memories above the floor,
// headed by their URI; nothing asked when the sink is not configured; a
// failing or stalled server is an error, within the caller's deadline.
func TestRecallSource(t *testing.T) {
	srv, err := ovfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.AddMemory("viking://user/u1/memories/events/deploy.md", "events", "The quokkaberry deploy failed because the zebrafinch cache was stale")
	srv.AddMemory("viking://user/u1/memories/preferences/editor.md", "preferences", "The user prefers vim keybindings")
	cfg := config.Default()
	getenv := func(k string) (string, bool) {
		if k == "HOME" {
			return t.TempDir(), true
		}
		return "", false
	}
	if RecallSource(cfg, getenv) != nil {
		t.Fatal("a remote without the openviking sink configured")
	}
	cfg.Sinks = []string{"local", Name}
	cfg.OpenViking.URL = srv.URL
	remote := RecallSource(cfg, getenv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	items, err := remote(ctx, "why did the quokkaberry deploy fail?", 5)
	if err != nil || len(items) != 1 {
		t.Fatalf("items %+v, %v", items, err)
	}
	it := items[0]
	if it.Source != Name || it.Session != "viking://user/u1/memories/events/deploy.md" || !strings.Contains(it.Text, "zebrafinch cache was stale") ||
		!strings.HasPrefix(it.Text, "[OpenViking memory viking://user/u1/memories/events/deploy.md (events)]") {
		t.Errorf("item %+v", it)
	}
	var sent bool
	for _, r := range srv.Requests() {
		sent = sent || (r.Path == "/api/v1/search/find" && strings.Contains(string(r.Body), `"score_threshold":0.35`))
	}
	if !sent {
		t.Error("no find request with the floor reached the server")
	}
	srv.Inject(ovfake.Fault{Route: "/search/find", Status: 500})
	if _, err := remote(ctx, "why did the quokkaberry deploy fail?", 5); err == nil {
		t.Error("a failing server gave no error")
	}
	srv.Inject(ovfake.Fault{Route: "/search/find", Delay: 3 * time.Second})
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	start := time.Now()
	if _, err := remote(short, "why did the quokkaberry deploy fail?", 5); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("a slow server: %v after %v", err, time.Since(start))
	}
}
