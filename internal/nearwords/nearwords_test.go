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

// A damaged table never panics a lookup: one whose parts do not fit is
// none, and one damaged inside gives no neighbour it cannot read.
func TestDamagedTable(t *testing.T) {
	Len() // the shipped table read first, so it is not read over a damaged one
	defer load(table)
	for name, data := range map[string][]byte{
		"empty":     nil,
		"magic":     []byte("cxnear0\n" + string(table[8:])),
		"truncated": table[:len(table)/2],
	} {
		load(data)
		if Len() != 0 || Of("kid") != nil {
			t.Errorf("%s: a damaged table was read (%d terms)", name, Len())
		}
	}
	// Every neighbour of every term pointing past the terms, every
	// offset past the strings: lookups find nothing, and do not panic.
	d := slices.Clone(table)
	le := binary.LittleEndian
	n, m := int(le.Uint32(d[8:])), int(le.Uint32(d[12:]))
	for k := range m {
		le.PutUint32(d[16+8*(n+1)+4*k:], uint32(n+k))
	}
	load(d)
	if ns := Of("kid"); len(ns) != 0 {
		t.Errorf("neighbours past the terms were given: %v", ns[:min(len(ns), 5)])
	}
	for i := range n + 1 {
		le.PutUint32(d[16+4*i:], uint32(len(d)))
	}
	load(d)
	if ns := Of("kid"); len(ns) != 0 {
		t.Errorf("terms past the strings were read: %v", ns[:min(len(ns), 5)])
	}
	// Bytes flipped anywhere: whatever is found, nothing panics.
	for seed := range 200 {
		d := slices.Clone(table)
		for k := range 50 {
			d[(seed*7919+k*104729)%len(d)] ^= byte(seed + k + 1)
		}
		load(d)
		for _, w := range []string{"kid", "museum", "zzz", "a"} {
			Of(w)
		}
	}
	load(table)
	if Of("kid") == nil {
		t.Fatal("the table did not come back")
	}
}
