package checkpoint

import "testing"

// What a user's message is: only a task states what the work is for.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind Kind
		text string
	}{
		{"Set up the notes file for the zebrafinch project", KindTask, "Set up the notes file for the zebrafinch project"},
		{"Thanks, remember the quokkaberry deadline is Friday.", KindNote, "the quokkaberry deadline is Friday."},
		{"thanks!", KindAck, ""},
		{"Thank you so much.", KindAck, ""},
		{"Great, thanks", KindAck, ""},
		{"Thanks! Now add tests for the parser.", KindTask, "Now add tests for the parser."},
		{"ok, continue", KindVague, "continue"},
		{"continue", KindVague, "continue"},
		{"Where were we on zebrafinch?", KindStatus, "Where were we on zebrafinch?"},
		{"so where are we?", KindStatus, "so where are we?"},
		{"What's the status of the migration?", KindStatus, "What's the status of the migration?"},
		{"remind me what we did yesterday", KindStatus, "remind me what we did yesterday"},
		{"Note that the API key lives in vault", KindNote, "the API key lives in vault"},
		{"FYI: staging is down until noon", KindNote, "staging is down until noon"},
		{"please remember to bump the version", KindNote, "to bump the version"},
		{"Type check the whole tree", KindTask, "Type check the whole tree"},
		{"Greatly simplify the retry loop", KindTask, "Greatly simplify the retry loop"},
		{"Status codes are wrong in the 404 handler", KindTask, "Status codes are wrong in the 404 handler"},
		{"Noted the failing test; fix it in parser.go", KindTask, "Noted the failing test; fix it in parser.go"},
		{"yes, use postgres for the queue", KindTask, "use postgres for the queue"},
	} {
		got := Classify(c.in)
		if got.Kind != c.kind || got.Text != c.text {
			t.Errorf("Classify(%q) = %v %q, want %v %q", c.in, got.Kind, got.Text, c.kind, c.text)
		}
	}
}
