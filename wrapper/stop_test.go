package wrapper

import (
	"context"
	"io"
	"os"
	"testing"
)

// A run that ends because the child exited cancels the stop policy's
// context too; the stop policy must not take that for a stop request (it
// wrote Ctrl+C keys the PTY echoed as "^C" on the user's terminal — seen in
// BenchmarkPTYStartOverhead once per few hundred runs).
func TestStopperIgnoresCancelAfterExit(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := &childRun{mode: ModePTY, ptmx: w, spec: Spec{Stop: StopPolicy{Keys: []byte{0x03}}}}
	exited := make(chan struct{})
	close(exited)
	for range 500 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		st := newStopper(s)
		st.loop(ctx, exited)
		if st.received != nil {
			t.Fatalf("the exit's cancel was taken for a stop (%v)", st.received)
		}
	}
	w.Close()
	if b, _ := io.ReadAll(r); len(b) > 0 {
		t.Fatalf("stop keys written after the child exited: %q", b)
	}
}
