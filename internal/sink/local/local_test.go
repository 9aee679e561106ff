package local

import (
	"context"
	"strings"
	"testing"
	"time"

	"cx/internal/checkpoint"
	"cx/internal/config"
	"cx/internal/continuity"
	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/recall/search"
	"cx/internal/rollout"
	"cx/internal/sink"
)

func commitReq(project, reason string) sink.Request {
	cp := checkpoint.Checkpoint{SchemaVersion: 1, SessionID: "s1", Cwd: project}
	return sink.Request{
		Session:    ledger.Session{ID: "s1", Cwd: project},
		Generation: ledger.Generation{SessionID: "s1", Generation: 1, EndReason: reason, Turns: 2},
		Turns: []rollout.Turn{
			{Key: "t1", Time: "2026-01-02T10:00:00Z", User: "why does the wombatcache deploy fail?", Assistant: []string{"the cache is stale"}},
			{Key: "t2", Time: "2026-01-02T10:05:00Z", User: "clear it", Tools: []rollout.ToolCall{{Name: "shell", Command: "make clear-wombatcache"}}},
		},
		Checkpoint: string(cp.JSON()),
	}
}

// A commit archives the generation with its index rows, so search finds
// its turns; a second commit of it (a retry after a crash) leaves one copy;
// an imported session is archived but leaves the continuity files alone.
func TestCommitArchivesAndIndexesOnce(t *testing.T) {
	for _, c := range []struct {
		reason     string
		continuity bool
	}{{"exit", true}, {sink.ReasonImport, false}} {
		t.Run(c.reason, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			home, project := t.TempDir(), t.TempDir()
			db, err := ledger.Open(ctx, home, ledger.Writer, ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			cfg := config.Config{Home: home}
			l := New(sink.Host{Store: db.SinkStore(), Cfg: cfg, Log: logs.New(home)})
			for range 2 {
				if err := l.Commit(ctx, commitReq(project, c.reason)); err != nil {
					t.Fatal(err)
				}
			}
			ar := search.NewArchive(db, home)
			hits, err := ar.Search(ctx, search.Query{Text: "wombatcache", Project: project})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != 2 || hits[0].Session != "s1" {
				t.Fatalf("hits %+v: want both turns once", hits)
			}
			store := continuity.Store{Home: home}
			proj, wt := store.Read(store.Identify(project))
			if got := strings.Contains(proj+wt, "`s1`"); got != c.continuity {
				t.Errorf("continuity names the session: %v, want %v\n%s\n%s", got, c.continuity, proj, wt)
			}
		})
	}
}
