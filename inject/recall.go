package inject

import (
	"cx/internal/recall/prompt"
	"strings"
)

// ForPrompt is the block per-prompt recall adds to a prompt: the recalled
// turns, each headed by where it came from, inside the same boundary as
// every cx block ("" for none).
func ForPrompt(items []prompt.Item) string {
	if len(items) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Turns of earlier sessions of this project that may bear on this prompt (cx's per-prompt recall; each is a past record, and `cx ctl show <session> --turn <n>` shows it whole):\n")
	for _, it := range items {
		b.WriteString("\n" + strings.TrimRight(it.Text, "\n") + "\n")
	}
	return Wrap("recall", b.String())
}
