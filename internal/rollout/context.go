package rollout

import (
	"bytes"
	"strings"
)

// SectionsIn finds the section hashes of the cx context blocks in b (a
// rollout's bytes, its JSON escapes and all).
func SectionsIn(b []byte) []string {
	if !bytes.Contains(b, []byte("<cx-context ")) {
		return nil
	}
	var out []string
	for _, m := range sectionsRE().FindAllSubmatch(b, -1) {
		for _, h := range strings.Split(string(m[1]), ",") {
			if h != "" {
				out = append(out, h)
			}
		}
	}
	return out
}

func isContextText(s string) bool {
	t := strings.TrimSpace(s)
	for _, p := range contextPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// StripInjected removes cx's own injected blocks from a text.
func StripInjected(s string) string {
	if !strings.Contains(s, "<cx-context") {
		return s
	}
	return strings.TrimSpace(injectedRE().ReplaceAllString(s, ""))
}
