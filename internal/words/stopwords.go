package words

import (
	"strings"
	"sync"
)

// IsStopword reports whether w (a lower-cased word as written, not a
// term) is a word that says how something is asked, not what it is about.
func IsStopword(w string) bool { return stopwords()[w] }

// Content is the set of s's terms that carry its topic: stemmed, without
// stopwords and words under three letters. Text in any language has
// them; the stopwords are English only, so another language keeps its
// function words (two texts then share more than their topic, never less).
func Content(s string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !isTokenRune(r) && r != '\'' && r != '’' }) {
		if stopwords()[f] {
			continue
		}
		for _, t := range Terms(nil, f) {
			if len([]rune(t)) >= 3 {
				out[t] = true
			}
		}
	}
	return out
}

// stopwords are English words that say how a question is asked, not what
// it is about: common function words, question words, auxiliaries and
// pronouns (after the classic SMART and Snowball lists, trimmed of words a
// coding question can mean: "go", "make", "run", "test", "new", "first").
var stopwords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a about above after again against all almost also am an and any anyone anything are aren't as at
		be because been before being below between both but by
		can can't cannot could couldn't
		did didn't do does doesn't doing don't done down during
		each either else even ever every
		few for from further
		get gets getting got
		had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his how how's however
		i i'd i'll i'm i've if in into is isn't it it's its itself
		just let's like likely
		many may me might mine more most much must mustn't my myself
		neither no nor not now
		of off often on once one only or other others otherwise ought our ours ourselves out over own
		per perhaps please
		quite rather really
		same say says shall shan't she she'd she'll she's should shouldn't since so some someone something sometimes such sure
		than that that's the their theirs them themselves then there there's these they they'd they'll they're they've thing things this those though through thus to too
		under until up upon us use used using usually
		very via
		was wasn't we we'd we'll we're we've were weren't what what's whatever when when's where where's whether which while who who's whom whose why why's will with within without won't would wouldn't
		yes yet you you'd you'll you're you've your yours yourself yourselves
		thanks thank ok okay hi hey hello`) {
		m[w] = true
		if strings.Contains(w, "'") {
			m[strings.ReplaceAll(w, "'", "’")] = true
		}
	}
	return m
})
