package sink

import (
	"context"
	"errors"
	"testing"
	"time"

	"cx/internal/config"
	"cx/internal/ledger"
)

func TestTurnsLeaveOutWhatDoesNotDecode(t *testing.T) {
	got := Turns([]ledger.StoredTurn{{Data: `{"key":"a","user":"one"}`}, {Data: `{"key":`}, {Data: `{"key":"b","user":"two"}`}})
	if len(got) != 2 || got[0].User != "one" || got[1].Key != "b" {
		t.Errorf("Turns: %+v", got)
	}
	if _, ok := Turn(ledger.StoredTurn{Data: "not json"}); ok {
		t.Error("Turn of a broken row: ok")
	}
}

// LockRemote serialises one sink's sends for one session across workers;
// another session, or another sink, is not held up.
func TestLockRemote(t *testing.T) {
	h := Host{Cfg: config.Config{Home: t.TempDir()}}
	ctx := context.Background()
	unlock, err := h.LockRemote(ctx, "s1", "openviking")
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range [][2]string{{"s2", "openviking"}, {"s1", "exec"}} {
		u, err := h.LockRemote(ctx, other[0], other[1])
		if err != nil {
			t.Fatalf("%v: %v", other, err)
		}
		u()
	}
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := h.LockRemote(wctx, "s1", "openviking"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second holder of s1's lock: %v, want it to wait until its context ends", err)
	}
	unlock()
	u, err := h.LockRemote(ctx, "s1", "openviking")
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	u()
}
