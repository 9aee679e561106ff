package house

import (
	"strings"
	"testing"
)

// The rules ARCHITECTURE.md states, held to the code: who may
// import what (who may open the ledger: internal/ledger's owners test).
func TestOwnershipRules(t *testing.T) {
	imports := map[string][]string{} // package → the packages of cx it imports
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		f := strings.Fields(line)
		p := strings.TrimPrefix(f[0], module)
		for _, q := range f[1:] {
			if strings.HasPrefix(q, module) {
				imports[p] = append(imports[p], strings.TrimPrefix(q, module))
			}
		}
	}
	for _, q := range imports["lifecycle"] {
		if q == "inject" || q == "internal/recall" || q == "internal/readmodel" {
			t.Errorf("lifecycle imports %s: the state machine returns facts, its caller builds blocks and views", q)
		}
	}
	for p, qs := range imports {
		for _, q := range qs {
			if strings.HasPrefix(q, "internal/sink/") && p != "internal/sinks" && !strings.HasPrefix(p, "internal/sink/") && !strings.HasPrefix(p, "internal/testing/") {
				t.Errorf("%s imports the concrete sink %s: only internal/sinks names them", p, q)
			}
		}
	}
}
