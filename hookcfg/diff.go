package hookcfg

import (
	"fmt"
	"strings"
)

// PlanDiff is what Install would change in hooks.json, as a diff ("" and
// false when nothing).
func (in *Installer) PlanDiff() (string, bool, error) {
	old, planned, changed, err := in.Plan()
	if err != nil || !changed {
		return "", false, err
	}
	return unifiedDiff(in.HooksPath(), string(old), string(planned)), true, nil
}

// unifiedDiff is a small line diff (longest common subsequence) for
// `install --dry-run`: hooks.json files are small.
func unifiedDiff(name, a, b string) string {
	x, y := splitLines(a), splitLines(b)
	n, m := len(x), len(y)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s (with cx's hooks)\n", name, name)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			// A changed line reads as removed, then added.
			out.WriteString("- " + x[i] + "\n")
			i++
		default:
			out.WriteString("+ " + y[j] + "\n")
			j++
		}
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
