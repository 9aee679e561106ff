package supervisor

import (
	"bytes"
	"fmt"
	"testing"
)

// The tap reassembles frames split anywhere, counts what is not JSON, and
// never panics, whatever the bytes.
func FuzzAppServerTap(f *testing.F) {
	f.Add([]byte(`{"id":1,"method":"thread/start","params":{}}`+"\n"+`{"id":1,"result":{"thread":{"id":"t"}}}`+"\n"), 7)
	f.Add([]byte("not json\n{\"method\":\"turn/completed\",\"params\":{\"threadId\":\"x\"}}\n{broken"), 3)
	f.Add([]byte("\n\n\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		tap := NewAppServerTap()
		tap.bind(nil)
		if split <= 0 {
			split = 1
		}
		for i := 0; i < len(data); i += split {
			tap.FromChild(data[i:min(len(data), i+split)])
		}
		tap.Close()
		want := 0
		for _, l := range bytes.Split(data, []byte{'\n'})[:bytes.Count(data, []byte{'\n'})] {
			if len(bytes.TrimSpace(l)) > 0 {
				want++
			}
		}
		if got := tap.Frames(); got != int64(want) {
			t.Fatalf("%d frames, want %d", got, want)
		}
		if tap.Unparsed() > tap.Frames() {
			t.Fatal("more unparsed than frames")
		}
	})
}

// A bug in handling a frame costs that frame, never the tap or the frames
// after it (the relay in front of it never sees the panic).
func TestTapSurvivesPanics(t *testing.T) {
	t.Setenv("CX_TEST_PANIC_AT", "tap-frame")
	tap := NewAppServerTap()
	tap.bind(nil)
	for i := 0; i < 3; i++ {
		tap.FromChild([]byte(`{"method":"turn/completed","params":{"threadId":"x"}}` + "\n"))
	}
	tap.Close()
	if tap.Frames() != 3 || tap.Panics() != 3 {
		t.Fatalf("frames %d panics %d, want 3 and 3", tap.Frames(), tap.Panics())
	}
}

// A frame past the tap's bound is skipped by the tap — counted, nothing of
// it kept — while the frames around it, split anywhere, are watched whole;
// the work per chunk is that chunk's, whatever is in progress.
func TestTapSkipsOversizedFrames(t *testing.T) {
	tap := NewAppServerTap()
	var got [][]byte
	tap.bind(nil)
	small := []byte(`{"method":"turn/completed","params":{"threadId":"x"}}`)
	stream := append(append([]byte{}, small...), '\n')
	huge := bytes.Repeat([]byte("a"), maxTapFrame+1)
	stream = append(append(append(stream, `{"result":"`...), huge...), "\"}\n"...)
	stream = append(append(stream, small...), '\n')
	for i := 0; i < len(stream); i += 65536 {
		tap.FromChild(stream[i:min(len(stream), i+65536)])
		tap.mu.Lock()
		if n := len(tap.streams[1].partial); n > maxTapFrame {
			t.Fatalf("%d bytes held for one frame, bound %d", n, maxTapFrame)
		}
		for _, f := range tap.queue {
			got = append(got, f.line)
		}
		tap.mu.Unlock()
	}
	tap.Close()
	if tap.Frames() != 2 || tap.Skipped() != 1 {
		t.Fatalf("frames %d skipped %d, want 2 and 1", tap.Frames(), tap.Skipped())
	}
	for _, l := range got {
		if !bytes.Equal(l, small) {
			t.Fatalf("watched %q…, want only the small frames", l[:min(len(l), 40)])
		}
	}
}

// Frames waiting for the tap's worker past its queue bound are dropped by
// the tap (counted), never waited for.
func TestTapQueueBounded(t *testing.T) {
	tap := NewAppServerTap() // not bound: its worker waits, the queue fills
	line := append(bytes.Repeat([]byte("b"), 1<<20), '\n')
	n := maxTapQueue/len(line) + 3
	for range n {
		tap.FromChild(line)
	}
	tap.mu.Lock()
	queued, frames := tap.queued, len(tap.queue)
	tap.mu.Unlock()
	if queued > maxTapQueue || tap.Skipped() == 0 || frames+int(tap.Skipped()) != n {
		t.Fatalf("queued %d bytes in %d frames, skipped %d of %d (bound %d)", queued, frames, tap.Skipped(), n, maxTapQueue)
	}
	tap.bind(nil)
	tap.Close()
}

// The frames of a streamed answer (a delta a word) are counted as they
// pass and never queued for the worker: only the frames that may mean
// something to it are (here a turn's end, and a response that may be a
// thread request's result).
func TestTapQueuesOnlyFramesThatMayMatter(t *testing.T) {
	tap := NewAppServerTap() // not bound yet: what is queued stays queued
	var stream []byte
	for i := 0; i < 1000; i++ {
		stream = fmt.Appendf(stream, `{"method":"item/agentMessage/delta","params":{"threadId":"T1","delta":" word%d"},"emittedAtMs":1}`+"\n", i)
	}
	stream = append(stream, `{"method":"turn/completed","params":{"threadId":"T1","turn":{"id":"U1"}}}`+"\n"...)
	stream = append(stream, `{"id":3,"result":{"thread":{"id":"T2"}}}`+"\n"...)
	for i := 0; i < len(stream); i += 4096 {
		tap.FromChild(stream[i:min(len(stream), i+4096)])
	}
	tap.FromParent([]byte(`{"id":4,"method":"turn/start","params":{"input":[]}}` + "\n"))
	tap.mu.Lock()
	var queued []string
	for _, f := range tap.queue {
		queued = append(queued, string(f.line[:20]))
	}
	tap.mu.Unlock()
	if len(queued) != 2 {
		t.Fatalf("queued %d frames, want the turn's end and the response: %q", len(queued), queued)
	}
	tap.bind(nil)
	tap.Close()
	if tap.Frames() != 1003 || tap.Unparsed() != 0 {
		t.Fatalf("frames %d unparsed %d, want 1003 and 0", tap.Frames(), tap.Unparsed())
	}
}
