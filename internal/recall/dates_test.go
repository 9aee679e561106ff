package recall

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cx/internal/rollout"
)

func TestCutDates(t *testing.T) {
	for _, c := range []struct {
		text, rest string
		want       []dateSpan
	}{
		{"What did Melanie paint on October 13, 2023?", "What did Melanie paint on  ?", []dateSpan{{2023, 10, 13}}},
		{"what changed on 2023-10-13", "what changed on  ", []dateSpan{{2023, 10, 13}}},
		{"What did Gina find on 1 February, 2023?", "What did Gina find on  ?", []dateSpan{{2023, 2, 1}}},
		{"the 13th of Oct 2023 deploy", "the   deploy", []dateSpan{{2023, 10, 13}}},
		{"the fix of March 5", "the fix of  ", []dateSpan{{0, 3, 5}}},
		{"Oct 3rd outage", "  outage", []dateSpan{{0, 10, 3}}},
		{"what did we ship in August", "what did we ship in  ", []dateSpan{{0, 8, 0}}},
		{"the 2022 release notes", "the   release notes", []dateSpan{{2022, 0, 0}}},
		{"May 2023 and June 2024", "  and  ", []dateSpan{{2023, 5, 0}, {2024, 6, 0}}},
		// Not dates: a modal verb, a month alone that is also a word, a
		// number that is no year, an impossible day.
		{"it may 2x the speed", "it may 2x the speed", nil},
		{"step 2 may fail", "step 2 may fail", nil},
		{"Which spot did Joanna visit in May?", "Which spot did Joanna visit in May?", nil},
		{"listen on port 8080", "listen on port 8080", nil},
		{"on 2023-13-45", "on 2023-13-45", nil},
	} {
		rest, got := cutDates(c.text)
		if rest != c.rest || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("cutDates(%q) = %q, %v; want %q, %v", c.text, rest, got, c.rest, c.want)
		}
	}
}

func TestDateSpanHolds(t *testing.T) {
	at := time.Date(2023, 10, 13, 23, 30, 0, 0, time.Local)
	for _, c := range []struct {
		d    dateSpan
		want bool
	}{
		{dateSpan{2023, 10, 13}, true}, {dateSpan{0, 10, 13}, true}, {dateSpan{2023, 10, 0}, true}, {dateSpan{2023, 0, 0}, true},
		{dateSpan{2023, 10, 14}, false}, {dateSpan{2022, 10, 13}, false}, {dateSpan{0, 11, 0}, false},
	} {
		if got := c.d.holds(at.UTC()); got != c.want {
			t.Errorf("%v holds %v = %v, want %v", c.d, at, got, c.want)
		}
		if from, to, ok := c.d.bounds(); ok && c.want != (!at.Before(from) && at.Before(to)) {
			t.Errorf("%v bounds [%v, %v) disagree with holds", c.d, from, to)
		}
	}
}

// A date in a question names when, not words: search and per-prompt recall
// both put the turn of that day first, among turns that say the same.
func TestDateInQuestionFindsThatDay(t *testing.T) {
	a, _ := testArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	for i, day := range []string{"2026-01-05", "2026-03-09", "2026-05-11"} {
		archive(t, a, fmt.Sprintf("d%d", i+1), 1, proj, []rollout.Turn{
			{Key: "k", Time: day + "T10:00:00Z", User: "we repainted the garden fence", Assistant: []string{"the fence looks fresh now"}}})
	}
	local := time.Date(2026, 3, 9, 10, 0, 0, 0, time.UTC).Local().Format("January 2, 2006")
	q := "what did we repaint on " + local + "?"
	hits, err := a.Search(ctx, Query{Text: q, Project: proj, Limit: 3})
	if err != nil || len(hits) == 0 || hits[0].Session != "d2" {
		t.Fatalf("search %q: %+v, %v (want d2 first)", q, hits, err)
	}
	items, err := a.Recall(ctx, PromptRequest{Prompt: q, Project: proj})
	if err != nil || len(items) == 0 || items[0].Session != "d2" {
		t.Fatalf("recall %q: %+v, %v (want d2 first)", q, items, err)
	}
	// Without the date the newest is first, as before.
	if hits, _ := a.Search(ctx, Query{Text: "what did we repaint?", Project: proj, Limit: 3}); len(hits) == 0 || hits[0].Session != "d3" {
		t.Errorf("search without a date: %+v (want d3 first)", hits)
	}
	if !strings.Contains(items[0].Text, "2026-03-09") {
		t.Errorf("the item does not say its day: %q", items[0].Text)
	}
}
