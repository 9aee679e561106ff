package recall

import (
	"context"
	"os"
	"runtime/pprof"
	"testing"
	"time"
)

func TestZZSearchProfile(t *testing.T) {
	home := os.Getenv("CX_PROBE_HOME")
	if home == "" {
		t.Skip()
	}
	ctx := context.Background()
	qs := []string{"When did Caroline go to the LGBTQ support group?", "What did Melanie paint recently?", "What is Caroline's identity?", "When did Melanie run a charity race?"}
	f, _ := os.Create("/tmp/search.prof")
	pprof.StartCPUProfile(f)
	start := time.Now()
	n := 0
	var open, search time.Duration
	for round := 0; round < 50; round++ {
		for _, q := range qs {
			t0 := time.Now()
			a, err := Open(ctx, home)
			if err != nil {
				t.Fatal(err)
			}
			t1 := time.Now()
			if _, err := a.Search(ctx, Query{Text: q, Project: os.Getenv("CX_PROBE_CWD"), Limit: 5}); err != nil {
				t.Fatal(err)
			}
			search += time.Since(t1)
			open += t1.Sub(t0)
			a.Close()
			n++
		}
	}
	pprof.StopCPUProfile()
	t.Logf("%v per search (open %v, search %v)", time.Since(start)/time.Duration(n), open/time.Duration(n), search/time.Duration(n))
}
