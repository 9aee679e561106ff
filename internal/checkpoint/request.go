package checkpoint

import (
	"regexp"
	"strings"
	"sync"
)

// Kind is what a user's message is, for the task pointer and the goal:
// only a task states what the work is for.
type Kind int

const (
	// KindTask asks for work: it is the task, and may be the goal.
	KindTask Kind = iota
	// KindVague nudges the work on ("continue", "run the tests").
	KindVague
	// KindAck only acknowledges ("thanks", "great").
	KindAck
	// KindNote asks the assistant to keep a fact ("remember the deadline
	// is Friday"): worth keeping, under its own heading, never the goal.
	KindNote
	// KindStatus asks where things stand ("where were we on X?").
	KindStatus
)

// Request is a user's message classified: its kind, and its text without
// a leading acknowledgement ("Thanks! Now add tests" is the task "Now add
// tests"); for a note, the fact itself.
type Request struct {
	Kind Kind
	Text string
}

// The patterns are compiled on first use: compiling them at start cost
// every cx process (a hook's, a search's, a run's) about 1% of its work.

// ackRE is a leading acknowledgement and the punctuation after it.
var ackRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:thanks(?: a lot| so much)?|thank you(?: so much)?|thx|ty|great|perfect|nice|cool|awesome|good|got it|sounds good|lgtm|ok(?:ay)?|yes|yep|yeah|alright|all right)\b[\s,.!:;—–-]*`)
})

// noteRE is a request to keep a fact; the fact follows it.
var noteRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:please\s+)?(?:remember(?: that)?|note(?: that)?|note:|fyi[,:]?|keep in mind(?: that)?|for the record[,:]?|don'?t forget(?: that)?|bear in mind(?: that)?)\s+`)
})

// statusRE is a question about where the work stands.
var statusRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:so\s+)?(?:where (?:were|are) we|where did we (?:leave|stop)|what (?:were|are) we (?:doing|working on)|what was i (?:doing|working on)|what(?:'s| is) the (?:status|state)|status(?:\s*\?|\s+(?:of|on|update)\b|$)|recap\b|remind me (?:where|what)|what did we (?:do|get done)|what have we (?:done|got)|how far (?:did|have) we (?:get|got|come))`)
})

// Classify says what a user's message is.
func Classify(s string) Request {
	text := strings.TrimSpace(s)
	acked := false
	for {
		loc := ackRE().FindStringIndex(text)
		if loc == nil || loc[1] == 0 {
			break
		}
		text, acked = strings.TrimSpace(text[loc[1]:]), true
	}
	switch {
	case text == "" && acked:
		return Request{Kind: KindAck}
	case IsVague(text):
		return Request{Kind: KindVague, Text: text}
	}
	if loc := noteRE().FindStringIndex(text); loc != nil {
		fact := strings.TrimSpace(text[loc[1]:])
		if fact != "" {
			return Request{Kind: KindNote, Text: fact}
		}
	}
	if statusRE().MatchString(text) {
		return Request{Kind: KindStatus, Text: text}
	}
	return Request{Kind: KindTask, Text: text}
}
