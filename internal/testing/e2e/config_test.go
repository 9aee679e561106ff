package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cx/internal/testing/codextest"
)

// One wrong value in cx's config costs that value alone (issue 52): the
// real Codex runs through cx with one warning naming the line and a line
// to write, and its session is recorded and committed, on the default for
// what the line set.
func TestWrongConfigValueStillRecords(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		if err := os.MkdirAll(h.CXHome, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.CXHome, "config.toml"), []byte("[inject]\nmax_chars = \"lots\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := h.Exec("", "exec", "note the quokka count [[shell: echo quokka]]")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if strings.Contains(errOut, "not recorded") || !strings.Contains(errOut, "write e.g. `max_chars = 6000`") {
			t.Errorf("stderr:\n%s", errOut)
		}
		ids := h.RolloutSessionIDs()
		if len(ids) != 1 {
			t.Fatalf("sessions %v", ids)
		}
		h.CXCtl("ctl", "sweep")
		if s := h.Sessions()[ids[0]]; s.Status != "committed" || s.Commits != 1 {
			t.Errorf("the session was not recorded: %+v", s)
		}
	})
}
