package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cx/internal/openviking/ovfake"
)

// With the openviking sink on, doctor checks the server: healthy and the
// key accepted; the key refused; the server down — each with its fix.
func TestDoctorChecksOpenViking(t *testing.T) {
	t.Parallel()
	srv, err := ovfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.APIKey = "right-key"
	dir := t.TempDir()
	fakeCodex(t, dir, "codex", false)
	cfgFile := filepath.Join(t.TempDir(), "config.toml")
	write := func(url string) {
		if err := os.WriteFile(cfgFile, []byte("sinks = [\"local\", \"openviking\"]\n[openviking]\nurl = \""+url+"\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	doctor := func(key string) string {
		r := runCX(t, []string{"PATH=" + dir + ":/usr/bin:/bin", "CX_CONFIG=" + cfgFile, "OPENVIKING_API_KEY=" + key}, "ctl", "doctor")
		return r.stdout
	}
	write(srv.URL)
	if out := doctor("right-key"); !strings.Contains(out, "ok   openviking       "+srv.URL+" healthy, key accepted") {
		t.Fatalf("server up, right key:\n%s", out)
	}
	if out := doctor("wrong-key"); !strings.Contains(out, "FAIL openviking") || !strings.Contains(out, "refused the key") || !strings.Contains(out, "OPENVIKING_API_KEY") {
		t.Fatalf("wrong key:\n%s", out)
	}
	write("http://127.0.0.1:1") // nothing listens there
	if out := doctor("right-key"); !strings.Contains(out, "FAIL openviking") || !strings.Contains(out, "does not answer") || !strings.Contains(out, "outbox") {
		t.Fatalf("server down:\n%s", out)
	}
}
