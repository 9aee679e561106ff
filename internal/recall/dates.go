package recall

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A date in a question ("what did we change on October 13, 2023?", "the
// fix of 2023-10-13") names when a turn was, not a word a turn holds: the
// turn's own time is matched against it, the date read as one term whose
// holders are the turns of that day (or month, or year), weighed by its
// rarity like any word. Its words are not searched for as words: a turn
// rarely says its own date, and a date's words that no turn holds would
// otherwise count against every turn.
type DateSpan struct {
	year, month, day int // 0: any
}

// holds reports whether t (in local time, as the user reads dates) falls
// within the span.
func (d DateSpan) Holds(t time.Time) bool {
	t = t.Local()
	return (d.year == 0 || t.Year() == d.year) && (d.month == 0 || int(t.Month()) == d.month) && (d.day == 0 || t.Day() == d.day)
}

// bounds is the span's time range when its year is known.
func (d DateSpan) Bounds() (from, to time.Time, ok bool) {
	switch {
	case d.year == 0:
		return from, to, false
	case d.month == 0:
		from = time.Date(d.year, 1, 1, 0, 0, 0, 0, time.Local)
		return from, from.AddDate(1, 0, 0), true
	case d.day == 0:
		from = time.Date(d.year, time.Month(d.month), 1, 0, 0, 0, 0, time.Local)
		return from, from.AddDate(0, 1, 0), true
	}
	from = time.Date(d.year, time.Month(d.month), d.day, 0, 0, 0, 0, time.Local)
	return from, from.AddDate(0, 0, 1), true
}

// Months are read in English, and as numbers in ISO dates (2023-10-13).
var monthNames = sync.OnceValue(func() map[string]int {
	m := map[string]int{}
	for i := time.January; i <= time.December; i++ {
		name := strings.ToLower(i.String())
		m[name], m[name[:3]] = int(i), int(i)
	}
	m["sept"] = 9
	return m
})

const (
	monthRE = `(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?`
	dayRE   = `(\d{1,2})(?:st|nd|rd|th)?`
	yearRE  = `((?:19|20)\d\d)`
)

// datePattern is a way a date is written; its match's groups are named
// by its layout (y, m, d).
type datePattern struct {
	re     *regexp.Regexp
	layout string
}

// datePatterns, most specific first: compiled when a question first may
// hold a date (compiling them costs a third of a millisecond, which every
// cx process would pay at start).
var datePatterns = sync.OnceValue(func() []datePattern {
	return []datePattern{
		{regexp.MustCompile(`\b` + yearRE + `-(\d\d)-(\d\d)\b`), "ymd"},
		{regexp.MustCompile(`(?i)\b` + dayRE + `\s+(?:of\s+)?` + monthRE + `,?\s+` + yearRE + `\b`), "dmy"},
		{regexp.MustCompile(`(?i)\b` + monthRE + `\s+` + dayRE + `(?:,?\s+` + yearRE + `)?\b`), "mdy"},
		{regexp.MustCompile(`(?i)\b` + dayRE + `\s+(?:of\s+)?` + monthRE + `\b`), "dm"},
		{regexp.MustCompile(`(?i)\b` + monthRE + `,?\s+` + yearRE + `\b`), "my"},
		{regexp.MustCompile(`\b` + yearRE + `\b`), "y"},
		// A month alone, named in full and capitalised (May and March are
		// words as often).
		{regexp.MustCompile(`\b(January|February|April|June|July|August|September|October|November|December)\b`), "m"},
	}
})

// mayHoldDate reports whether text may hold a date: a digit, or a month's
// name (most questions have neither, and skip the patterns).
func mayHoldDate(text string) bool {
	if strings.ContainsAny(text, "0123456789") {
		return true
	}
	lower := strings.ToLower(text)
	for name := range monthNames() {
		if len(name) > 3 && strings.Contains(lower, name) {
			return true
		}
	}
	return false
}

// cutDates takes the dates out of a question: the text without them, and
// the dates it named.
func cutDates(text string) (string, []DateSpan) {
	if !mayHoldDate(text) {
		return text, nil
	}
	var spans []DateSpan
	for _, p := range datePatterns() {
		var out strings.Builder
		last := 0
		for _, m := range p.re.FindAllStringSubmatchIndex(text, -1) {
			d, ok := readDate(text, m, p.layout)
			if !ok {
				continue
			}
			spans = append(spans, d)
			out.WriteString(text[last:m[0]])
			out.WriteByte(' ')
			last = m[1]
		}
		out.WriteString(text[last:])
		text = out.String()
	}
	return text, spans
}

// readDate reads match m of text as a date of layout; false when it is
// none: part of a longer token (a version, a path, a range), a month or
// day out of range, a day with no month, or a modal verb.
func readDate(text string, m []int, layout string) (DateSpan, bool) {
	var d DateSpan
	s := text[m[0]:m[1]]
	if m[0] > 0 && strings.ContainsRune("-/.:", rune(text[m[0]-1])) || m[1] < len(text) && strings.ContainsRune("-/:", rune(text[m[1]])) {
		return d, false
	}
	for i, c := range layout {
		if m[2+2*i] < 0 {
			continue // an optional part left out (a day with no year)
		}
		g := text[m[2+2*i]:m[3+2*i]]
		switch c {
		case 'y':
			d.year, _ = strconv.Atoi(g)
		case 'd':
			d.day, _ = strconv.Atoi(g)
		case 'm':
			if n, err := strconv.Atoi(g); err == nil {
				d.month = n
			} else {
				d.month = monthNames()[strings.ToLower(strings.TrimSuffix(g, "."))]
			}
		}
	}
	return d, d.month <= 12 && d.day <= 31 && (d.month != 0 || d.day == 0) && !modal(s)
}

// modal reports whether a match's month is a word that is more often
// something else ("it may 2x", "step 2 may fail") written in lower case: a
// month is capitalised.
func modal(s string) bool {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '.' }) {
		if w == "may" || w == "mar" {
			return true
		}
	}
	return false
}
