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
	for round := 0; round < 50; round++ {
		for _, q := range qs {
			a, err := Open(ctx, home)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Search(ctx, Query{Text: q, Project: os.Getenv("CX_PROBE_CWD"), Limit: 5}); err != nil {
				t.Fatal(err)
			}
			a.Close()
			n++
		}
	}
	pprof.StopCPUProfile()
	t.Logf("%v per search", time.Since(start)/time.Duration(n))
}
