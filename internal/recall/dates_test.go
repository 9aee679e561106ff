package recall

import (
	"fmt"
	"testing"
	"time"
)

func TestCutDates(t *testing.T) {
	for _, c := range []struct {
		text, rest string
		want       []DateSpan
	}{
		{"What did Melanie paint on October 13, 2023?", "What did Melanie paint on  ?", []DateSpan{{2023, 10, 13}}},
		{"what changed on 2023-10-13", "what changed on  ", []DateSpan{{2023, 10, 13}}},
		{"What did Gina find on 1 February, 2023?", "What did Gina find on  ?", []DateSpan{{2023, 2, 1}}},
		{"the 13th of Oct 2023 deploy", "the   deploy", []DateSpan{{2023, 10, 13}}},
		{"the fix of March 5", "the fix of  ", []DateSpan{{0, 3, 5}}},
		{"Oct 3rd outage", "  outage", []DateSpan{{0, 10, 3}}},
		{"what did we ship in August", "what did we ship in  ", []DateSpan{{0, 8, 0}}},
		{"the 2022 release notes", "the   release notes", []DateSpan{{2022, 0, 0}}},
		{"May 2023 and June 2024", "  and  ", []DateSpan{{2023, 5, 0}, {2024, 6, 0}}},
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
		d    DateSpan
		want bool
	}{
		{DateSpan{2023, 10, 13}, true}, {DateSpan{0, 10, 13}, true}, {DateSpan{2023, 10, 0}, true}, {DateSpan{2023, 0, 0}, true},
		{DateSpan{2023, 10, 14}, false}, {DateSpan{2022, 10, 13}, false}, {DateSpan{0, 11, 0}, false},
	} {
		if got := c.d.Holds(at.UTC()); got != c.want {
			t.Errorf("%v holds %v = %v, want %v", c.d, at, got, c.want)
		}
		if from, to, ok := c.d.Bounds(); ok && c.want != (!at.Before(from) && at.Before(to)) {
			t.Errorf("%v bounds [%v, %v) disagree with holds", c.d, from, to)
		}
	}
}

// A date in a question names when, not words: search and per-prompt recall
// both put the turn of that day first, among turns that say the same.
