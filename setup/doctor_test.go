package setup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cx/internal/config"
	"cx/internal/crumbs"
	"cx/internal/health"
)

func find(checks []health.Check, name string) (health.Check, bool) {
	for _, c := range checks {
		if c.Name == name {
			return c, true
		}
	}
	return health.Check{}, false
}

// The ledger's part of doctor: a CX_HOME cx can use passes; one that is a
// file fails with the fix for it; a run that could not write the ledger is
// reported until it is recovered.
func TestLedgerChecks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	getenv := func(string) (string, bool) { return "", false }
	home := t.TempDir()
	checks := ledgerChecks(ctx, config.Config{Home: home, Sinks: []string{"local"}}, "", getenv)
	for _, name := range []string{"ledger", "unrecorded runs"} {
		if c, ok := find(checks, name); !ok || !c.OK {
			t.Errorf("%s on a usable CX_HOME: %+v", name, c)
		}
	}
	if err := crumbs.Mark(home, "/codex", crumbs.Run, time.Now(), []string{"019a-1"}); err != nil {
		t.Fatal(err)
	}
	if c, _ := find(ledgerChecks(ctx, config.Config{Home: home}, "", getenv), "unrecorded runs"); c.OK || !strings.Contains(c.Detail, "1 run(s)") || !strings.Contains(c.Fix, "cx ctl sweep") {
		t.Errorf("a breadcrumb: %+v", c)
	}
	file := filepath.Join(t.TempDir(), "home")
	os.WriteFile(file, nil, 0o600)
	if c, _ := find(ledgerChecks(ctx, config.Config{Home: file}, "", getenv), "ledger"); c.OK || !strings.Contains(c.Fix, "move what stands at "+file+" aside") {
		t.Errorf("a CX_HOME that is a file: %+v", c)
	}
}
