package e2e

import (
	"strings"
	"testing"

	"cx/internal/testing/codextest"
)

// Per-prompt recall in a coding project, on real Codex: four sessions of
// one repository — an invoice migration, a CSV export, a login fix, a
// slow report — each running its tests and fixing what fails, as work
// goes. A prompt made of the words every
// session uses ("run the tests", "the tests fail again, can you fix
// them") reaches the model with nothing recalled, however many turns hold
// those words; a prompt that names a subject gets that subject's turn.
func TestGenericPromptsRecallNothing(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		sessions := [][]string{
			{"Migrate the invoice tables to the new ledger schema [[shell: echo migrated invoices]]",
				"Run the tests for the invoice migration and fix what fails [[shell: echo go test ./invoice/... ok]]"},
			{"Add a CSV export of the monthly report, one column per field [[shell: echo export written]]",
				"The export test fails on the header row, fix it [[shell: echo go test ./export/... ok]]"},
			{"Fix the login redirect loop after the session expires [[shell: echo redirect fixed]]",
				"The login test fails, fix it and run the tests again [[shell: echo go test ./auth/... ok]]"},
			{"The yearly report is slow, profile the report query [[shell: echo index on created_at]]",
				"Run the tests after adding the index and fix any failure [[shell: echo go test ./report/... ok]]"},
		}
		for _, s := range sessions {
			if _, errOut, code := h.Exec("", "exec", s[0]); code != 0 {
				t.Fatalf("%q: exit %d: %s", s[0], code, errOut)
			}
			ids := h.RolloutSessionIDs()
			if _, errOut, code := h.Exec("", "exec", "resume", ids[len(ids)-1], s[1]); code != 0 {
				t.Fatalf("%q: exit %d: %s", s[1], code, errOut)
			}
		}
		// The last: ordinary words and words only near a session's in
		// meaning (recall's dense stage, on by default), which name no topic.
		for _, p := range []string{"run the tests", "the tests fail again, can you fix them", "fix the failing test", "run the tests for the sign in"} {
			if _, errOut, code := h.Exec("", "exec", p); code != 0 {
				t.Fatalf("%q: exit %d: %s", p, code, errOut)
			}
			if text := inputText(requestFor(t, h, p)); strings.Contains(text, `source="cx:recall"`) {
				t.Errorf("%q, a prompt of words every session uses, was given recall:\n%s", p, cxBlocks(text))
			}
		}
		ask := "make the CSV export include the tax column"
		if _, errOut, code := h.Exec("", "exec", ask); code != 0 {
			t.Fatalf("%q: exit %d: %s", ask, code, errOut)
		}
		text := inputText(requestFor(t, h, ask))
		j := strings.Index(text, `source="cx:recall"`)
		if j < 0 || !strings.Contains(text[j:], "CSV export of the monthly report") {
			t.Fatalf("%q reached the model without the CSV turn:\n%s", ask, cxBlocks(text))
		}
		for _, other := range []string{"invoice tables", "login redirect", "yearly report"} {
			if strings.Contains(text[j:], other) {
				t.Errorf("%q was given another subject's turn (%q):\n%s", ask, other, cxBlocks(text))
			}
		}
	})
}
