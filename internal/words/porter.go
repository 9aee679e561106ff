package words

// Stem is Porter's stemming algorithm (M. F. Porter, "An algorithm for
// suffix stripping", 1980), as FTS5's porter tokenizer applies it: to
// tokens of 3 to 64 bytes, others unchanged.
func Stem(w string) string {
	if len(w) < 3 || len(w) > 64 {
		return w
	}
	s := stemmer{b: []byte(w)}
	s.step1a()
	s.step1b()
	s.step1c()
	s.step2()
	s.step3()
	s.step4()
	s.step5()
	return string(s.b)
}

type stemmer struct {
	b []byte
}

// cons reports whether b[i] is a consonant: not a, e, i, o or u, and a y
// only after a vowel (or at the start).
func (s *stemmer) cons(i int) bool {
	switch s.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !s.cons(i-1)
	}
	return true
}

// measure is m of the word's first n bytes, seen as [C](VC)^m[V].
func (s *stemmer) measure(n int) int {
	m, i := 0, 0
	for i < n && s.cons(i) {
		i++
	}
	for i < n {
		for i < n && !s.cons(i) {
			i++
		}
		if i == n {
			break
		}
		m++
		for i < n && s.cons(i) {
			i++
		}
	}
	return m
}

// hasVowel reports whether the first n bytes hold a vowel.
func (s *stemmer) hasVowel(n int) bool {
	for i := 0; i < n; i++ {
		if !s.cons(i) {
			return true
		}
	}
	return false
}

// doubleCons reports whether the first n bytes end in a double consonant.
func (s *stemmer) doubleCons(n int) bool {
	return n >= 2 && s.b[n-1] == s.b[n-2] && s.cons(n-1)
}

// cvc reports whether the first n bytes end consonant-vowel-consonant,
// the last not w, x or y (*o: "hop", "fil", not "snow").
func (s *stemmer) cvc(n int) bool {
	if n < 3 || !s.cons(n-1) || s.cons(n-2) || !s.cons(n-3) {
		return false
	}
	switch s.b[n-1] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

// ends reports whether the word ends in suffix after a stem of at least
// one byte (as FTS5's rules want), and the stem's length.
func (s *stemmer) ends(suffix string) (int, bool) {
	n := len(s.b) - len(suffix)
	if n < 1 || string(s.b[n:]) != suffix {
		return 0, false
	}
	return n, true
}

// replace puts to in place of the word's bytes from n on.
func (s *stemmer) replace(n int, to string) { s.b = append(s.b[:n], to...) }

// rules tries each (suffix, replacement) in order: the first suffix the
// word ends in is replaced when its stem's measure is above min; later
// ones are not tried.
func (s *stemmer) rules(min int, rs []string) {
	for i := 0; i < len(rs); i += 2 {
		if n, ok := s.ends(rs[i]); ok {
			if s.measure(n) > min {
				s.replace(n, rs[i+1])
			}
			return
		}
	}
}

func (s *stemmer) step1a() {
	// FTS5 keeps a letter before "sses" and "ies" ("sses" is "sse").
	switch n := len(s.b); {
	case n > 4 && hasSuffix(s.b, "sses"), n > 3 && hasSuffix(s.b, "ies"):
		s.b = s.b[:n-2]
	case hasSuffix(s.b, "ss"):
	case hasSuffix(s.b, "s"):
		s.b = s.b[:len(s.b)-1]
	}
}

func (s *stemmer) step1b() {
	if n, ok := s.ends("eed"); ok {
		if s.measure(n) > 0 {
			s.b = s.b[:len(s.b)-1]
		}
		return
	}
	n, ok := s.ends("ed")
	if !ok {
		n, ok = s.ends("ing")
	}
	if !ok || !s.hasVowel(n) {
		return
	}
	s.b = s.b[:n]
	switch {
	case hasSuffix(s.b, "at"), hasSuffix(s.b, "bl"), hasSuffix(s.b, "iz"):
		s.b = append(s.b, 'e')
	case s.doubleCons(n):
		switch s.b[n-1] {
		case 'l', 's', 'z':
		default:
			s.b = s.b[:n-1]
		}
	case s.measure(n) == 1 && s.cvc(n):
		s.b = append(s.b, 'e')
	}
}

func (s *stemmer) step1c() {
	if n, ok := s.ends("y"); ok && s.hasVowel(n) {
		s.b[n] = 'i'
	}
}

var step2Rules = []string{
	"ational", "ate", "tional", "tion", "enci", "ence", "anci", "ance", "izer", "ize", "bli", "ble", "alli", "al",
	"entli", "ent", "eli", "e", "ousli", "ous", "ization", "ize", "ation", "ate", "ator", "ate", "alism", "al",
	"iveness", "ive", "fulness", "ful", "ousness", "ous", "aliti", "al", "iviti", "ive", "biliti", "ble", "logi", "log",
}

func (s *stemmer) step2() { s.rules(0, step2Rules) }

var step3Rules = []string{"icate", "ic", "ative", "", "alize", "al", "iciti", "ic", "ical", "ic", "ful", "", "ness", ""}

func (s *stemmer) step3() { s.rules(0, step3Rules) }

var step4Suffixes = []string{"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize"}

func (s *stemmer) step4() {
	for _, suf := range step4Suffixes {
		n, ok := s.ends(suf)
		if !ok {
			continue
		}
		if suf == "ion" && (n == 0 || (s.b[n-1] != 's' && s.b[n-1] != 't')) {
			return
		}
		if s.measure(n) > 1 {
			s.b = s.b[:n]
		}
		return
	}
}

func (s *stemmer) step5() {
	if n, ok := s.ends("e"); ok {
		if m := s.measure(n); m > 1 || (m == 1 && !s.cvc(n)) {
			s.b = s.b[:n]
		}
	}
	if n := len(s.b); n > 0 && s.b[n-1] == 'l' && s.doubleCons(n) && s.measure(n) > 1 {
		s.b = s.b[:n-1]
	}
}

func hasSuffix(b []byte, suffix string) bool {
	return len(b) >= len(suffix) && string(b[len(b)-len(suffix):]) == suffix
}
