package tty

import "testing"

func TestModes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"nothing", []string{"hello \x1b[1;31mred\x1b[0m"}, ""},
		// What Codex's TUI turns on (seen with 0.169/0.171 under a terminal).
		{"codex at its prompt", []string{"\x1b[?1049h\x1b[>5u\x1b[?1004h\x1b[?1007h\x1b[?2004h\x1b[?25l"},
			"\x1b[?1049l\x1b[?1004l\x1b[?1007l\x1b[?25h\x1b[<1u"},
		{"codex that left cleanly", []string{"\x1b[?1049h\x1b[>5u\x1b[?1004h", "\x1b[?1004l\x1b[<u\x1b[?1049l"}, ""},
		{"a sequence cut by a read", []string{"\x1b[?10", "49h x \x1b", "[>1u"}, "\x1b[?1049l\x1b[<1u"},
		{"several modes in one sequence", []string{"\x1b[?1000;1006h"}, "\x1b[?1000l\x1b[?1006l"},
		{"pop more than pushed", []string{"\x1b[>1u\x1b[<3u"}, ""},
		{"modes not followed", []string{"\x1b[?2004h\x1b[?12h\x1b[4h"}, ""},
		{"a cursor shown again", []string{"\x1b[?25l", "\x1b[?25h"}, ""},
		{"not a CSI", []string{"\x1b]0;title\x07\x1b=\x1b[?1h"}, "\x1b[?1l"},
	} {
		var m Modes
		changed := false
		for _, c := range tc.chunks {
			changed = m.Observe([]byte(c)) || changed
		}
		if got := string(m.Reset()); got != tc.want {
			t.Errorf("%s: Reset %q, want %q", tc.name, got, tc.want)
		}
		if tc.want != "" && !changed {
			t.Errorf("%s: no change reported", tc.name)
		}
		// What Restore turns back on, Reset turns off again: a tracker fed
		// Restore is where m was.
		var again Modes
		again.Observe(m.Restore())
		if got := string(again.Reset()); got != tc.want {
			t.Errorf("%s: Restore then Reset %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Plain text costs a scan for ESC and nothing else.
func BenchmarkModesText(b *testing.B) {
	buf := make([]byte, 16<<10)
	for i := range buf {
		buf[i] = 'a' + byte(i%26)
	}
	var m Modes
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		m.Observe(buf)
	}
}

func TestModesRestore(t *testing.T) {
	var m Modes
	m.Observe([]byte("\x1b[?1049h\x1b[>5u\x1b[?1004h\x1b[?25l"))
	if got, want := string(m.Restore()), "\x1b[?1049h\x1b[?1004h\x1b[?25l\x1b[>5u"; got != want {
		t.Errorf("Restore %q, want %q", got, want)
	}
}
