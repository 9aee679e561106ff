package nearwords

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"cx/internal/words"
)

// The shipped table: its terms are recall terms, sorted, and a few words
// every English speaker would call near are.
func TestTableNearWords(t *testing.T) {
	if Len() < 30000 {
		t.Fatalf("the table has %d terms; want the 60,000 most used words' (near.bin damaged or missing?)", Len())
	}
	for i := 1; i < Len(); i++ {
		if bytes.Compare(termBytes(i-1), termBytes(i)) >= 0 {
			t.Fatalf("terms not sorted at %d: %q, %q", i, termBytes(i-1), termBytes(i))
		}
	}
	for _, c := range []struct{ a, b string }{{"kids", "children"}, {"painting", "sculpture"}, {"guitar", "piano"}, {"recently", "lately"}} {
		a, b := words.Stem(c.a), words.Stem(c.b)
		ns := Of(a)
		k := slices.IndexFunc(ns, func(n Near) bool { return n.Term == b })
		if k < 0 {
			t.Errorf("%s (%s): %s not near; near: %v", c.a, a, b, ns[:min(len(ns), 10)])
			continue
		}
		if c := ns[k].Cosine; c < MinCos || c > 1 {
			t.Errorf("%s ~ %s: cosine %.3f", a, b, c)
		}
		if !slices.IsSortedFunc(ns, func(x, y Near) int { return -cmpFloat(x.Cosine, y.Cosine) }) {
			t.Errorf("%s: not nearest first: %v", a, ns)
		}
	}
	for _, w := range []string{"", "zzzzqx", "the"} {
		if ns := Of(w); ns != nil {
			t.Errorf("Of(%q) = %v, want none", w, ns)
		}
	}
	most := 0
	le := binary.LittleEndian
	for i := 0; i < Len(); i++ {
		most = max(most, int(le.Uint32(firsts[4*i+4:])-le.Uint32(firsts[4*i:])))
	}
	t.Logf("%d terms, at most %d neighbours", Len(), most)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// A damaged table is no table: every lookup misses, nothing panics.
func TestDamagedTable(t *testing.T) {
	defer load(table)
	for name, data := range map[string][]byte{
		"empty":     nil,
		"magic":     []byte("cxnear0\n" + string(table[8:])),
		"truncated": table[:len(table)/2],
		"bad index": func() []byte {
			d := slices.Clone(table)
			n, m := int(binary.LittleEndian.Uint32(d[8:])), int(binary.LittleEndian.Uint32(d[12:]))
			binary.LittleEndian.PutUint32(d[16+8*(n+1)+4*(m-1):], uint32(n))
			return d
		}(),
	} {
		load(data)
		if Len() != 0 || Of("kid") != nil {
			t.Errorf("%s: a damaged table was read (%d terms)", name, Len())
		}
	}
	load(table)
	if Of("kid") == nil {
		t.Fatal("the table did not come back")
	}
}
