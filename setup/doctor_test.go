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
	"cx/internal/ledger"
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

// Doctor makes no ledger (issue 52), and its unrecorded-runs line agrees
// with `cx ctl import --dry-run`: the sessions in Codex's rollouts the
// archive does not hold are counted and `cx ctl import` named.
func TestDoctorAgreesWithImport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	getenv := func(string) (string, bool) { return "", false }
	home, codexHome := t.TempDir(), t.TempDir()
	cfg := config.Config{Home: home, Sinks: []string{"local"}}
	if c, _ := find(ledgerChecks(ctx, cfg, codexHome, getenv), "ledger"); !c.OK || !strings.Contains(c.Detail, "none yet") {
		t.Errorf("before any run: %+v", c)
	}
	if _, err := os.Stat(filepath.Join(home, "cx.db")); err == nil {
		t.Fatal("doctor made a ledger")
	}
	data, err := os.ReadFile("../testdata/rollouts/0.171.0/exec-tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(codexHome, "sessions", "2026", "11", "22")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-11-22T01-32-37-01a200e2-3ee2-72f3-aa24-7574f709737a.jsonl"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	_ = os.Chtimes(filepath.Join(dir, "rollout-2026-11-22T01-32-37-01a200e2-3ee2-72f3-aa24-7574f709737a.jsonl"), past, past)
	db, err := ledger.Open(ctx, home, ledger.Writer, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	c, _ := find(ledgerChecks(ctx, cfg, codexHome, getenv), "unrecorded runs")
	if want := importable(ctx, cfg, codexHome); want != 1 || !strings.Contains(c.Detail, "1 session in Codex's rollouts is not archived") || !strings.Contains(c.Detail, "`cx ctl import`") {
		t.Errorf("import would take %d; doctor says: %+v", want, c)
	}
}
