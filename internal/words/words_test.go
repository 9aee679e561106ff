package words

import (
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

func TestTerms(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"How did we fix the failing test?", "how did we fix the fail test"},
		{"It failed; fixes FAILED", "it fail fix fail"},
		{"parser_test.go", "parser test go"},
		{"Café résumé naïve", "cafe resum naiv"},
		{"don't 42 x", "don t 42 x"},
		{"generalizations relational", "gener relat"},
		{"", ""},
	} {
		if got := strings.Join(Terms(nil, tc.in), " "); got != tc.want {
			t.Errorf("Terms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEachGivesWhereEachWordIs(t *testing.T) {
	s := "Café, résumé! parser_test.go"
	var got []string
	Each(s, func(term string, start, end int) { got = append(got, term+"="+s[start:end]) })
	want := []string{"cafe=Café", "resum=résumé", "parser=parser", "test=test", "go=go"}
	if !slices.Equal(got, want) {
		t.Errorf("Each = %q, want %q", got, want)
	}
}

// TestTermsAgreeWithTheIndex tokenizes a corpus with Terms and with the
// recall index's own tokenizer (FTS5 'porter unicode61 remove_diacritics
// 2', read back through fts5vocab), and wants the same terms: recall's
// window and the index must agree on what a word is. The corpus is this
// repository's Go source and documentation, and words chosen for every
// rule of the stemmer.
func TestTermsAgreeWithTheIndex(t *testing.T) {
	// A few hundred kilobytes: SQLite is pure Go, and slow under -race.
	var corpus []string
	for _, pattern := range []string{"../../README.md", "../../internal/recall/*.go", "*.go"} {
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				corpus = append(corpus, string(data))
			}
		}
	}
	corpus = append(corpus, `caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized hopping tanned
		falling hissing fizzed failing filing happy sky relational conditional rational valenci hesitanci digitizer conformabli radicalli
		differentli vileli analogousli vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti
		sensitiviti sensibiliti triplicate formative formalize electriciti electrical hopeful goodness revival allowance inference airliner
		gyroscopic adjustable defensible irritant replacement adjustment dependent adoption homologou communism activate angulariti homologous
		effective bowdlerize probate rate cease controll roll generalizations oscillators archaeology apology geology ion lion agreement yes y
		crying toying played syzygy ex mississippi a an it is bb abled blled izing sses ies eed µs đak naïve résumé Ångström Øresund łódź ĦĲ`)
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE VIRTUAL TABLE doc USING fts5(x, tokenize = 'porter unicode61 remove_diacritics 2')`,
		`CREATE VIRTUAL TABLE vocab USING fts5vocab(doc, 'instance')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	checked, differ := 0, 0
	for i, text := range corpus {
		if _, err := db.Exec(`INSERT INTO doc (rowid, x) VALUES (?, ?)`, i+1, text); err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(`SELECT term FROM vocab WHERE doc = ? ORDER BY offset`, i+1)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for rows.Next() {
			var term string
			rows.Scan(&term)
			want = append(want, term)
		}
		rows.Close()
		got := Terms(nil, text)
		checked += len(want)
		if !slices.Equal(got, want) {
			for k := 0; k < min(len(got), len(want)); k++ {
				if got[k] != want[k] {
					if differ < 20 {
						t.Errorf("term %d of text %d: Terms has %q, the index %q", k, i, got[k], want[k])
					}
					differ++
					break
				}
			}
			if len(got) != len(want) {
				t.Errorf("text %d: Terms has %d terms, the index %d", i, len(got), len(want))
			}
		}
	}
	t.Logf("%d terms of %d texts compared", checked, len(corpus))
}

// A term keeps its word's start (Starts relies on it): its first two
// bytes, the second a 'y' that may turn 'i', or it is one byte, the
// word's first. Porter's steps replace suffixes: checked on every word of
// three and four letters, on words of five and six made of vowels and the
// letters of the suffixes that reach back to the second byte, on short
// words made to be all suffix, and on every word of this package's text.
func TestStemKeepsItsStart(t *testing.T) {
	words := strings.Fields("ies sses eed ed ing ational tional enci anci izer abli alli entli eli ousli ization ation ator alism iveness fulness ousness aliti iviti biliti icate ative alize iciti ical ful ness al ance ence er ic able ible ant ement ment ent ion ou ism ate iti ous ive ize y yy ey")
	src, _ := os.ReadFile("porter.go")
	EachWord(string(src), func(w []byte, _, _ int) { words = append(words, string(w)) })
	var every func(w []byte, n int, letters string)
	every = func(w []byte, n int, letters string) {
		if len(w) == n {
			words = append(words, string(w))
			return
		}
		for i := range len(letters) {
			every(append(w, letters[i]), n, letters)
		}
	}
	every(nil, 3, "abcdefghijklmnopqrstuvwxyz")
	every(nil, 4, "abcdefghijklmnopqrstuvwxyz")
	every(nil, 5, "aeiouysdng")
	every(nil, 6, "aeiysdng")
	bad := 0
	for _, w := range words {
		var s Starts
		s.Add(Stem(w))
		if !s.May([]byte(w)) {
			if bad++; bad <= 10 {
				t.Errorf("Stem(%q) = %q: not its start", w, Stem(w))
			}
		}
	}
	t.Logf("%d words", len(words))
}

// Starts tells a word that may be a term from one that cannot.
func TestStarts(t *testing.T) {
	var s Starts
	for _, term := range []string{"parser", "ei", "x", ""} {
		s.Add(term)
	}
	for w, want := range map[string]bool{
		"parsing": true, "pa": true, "eyed": true, "eiffel": true, "x": true, "xylophone": true,
		"p": false, "pr": false, "ey": true, "ye": false, "": false, "a": false, "ap": false,
	} {
		if got := s.May([]byte(w)); got != want {
			t.Errorf("May(%q) = %v, want %v", w, got, want)
		}
	}
	var none Starts
	if none.May([]byte("parser")) {
		t.Error("an empty Starts holds a word")
	}
}

// Stems gives what Stem gives, the second time from memory: each word of
// this package's text, as EachWord hands it (its bytes reused after).
func TestStemsIsStem(t *testing.T) {
	src, _ := os.ReadFile("porter.go")
	stems := Stems{}
	for range 2 {
		n := 0
		EachWord(string(src), func(w []byte, _, _ int) {
			n++
			if got, want := stems.Of(w), Stem(string(w)); got != want {
				t.Fatalf("Stems.Of(%q) = %q, Stem gives %q", w, got, want)
			}
		})
		if n < 500 || len(stems) < 100 {
			t.Fatalf("%d words, %d stems remembered: too few to test", n, len(stems))
		}
	}
}
