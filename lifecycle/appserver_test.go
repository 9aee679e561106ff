package lifecycle

import (
	"bytes"
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
