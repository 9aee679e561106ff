package codex

import (
	"strconv"
	"strings"
)

// CompareVersions compares dotted numeric versions ("0.169.0"): -1, 0 or 1.
// A pre-release suffix ("-alpha.1") is ignored.
func CompareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}

func versionParts(v string) []int {
	v, _, _ = strings.Cut(v, "-")
	var out []int
	for _, p := range strings.Split(v, ".") {
		n, _ := strconv.Atoi(p)
		out = append(out, n)
	}
	return out
}

// HasHookTrust reports whether a Codex version requires hooks to be trusted
// before they run (seen on 0.169; 0.128 runs every hook).
func (c Caps) HasHookTrust() bool { return CompareVersions(c.Version, "0.145.0") >= 0 }
