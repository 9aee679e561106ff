package hookcfg

import (
	"encoding/json"
	"fmt"
)

// node is a JSON value with its byte span in the source, so cx can edit a
// user's hooks.json by inserting and removing text: every byte it does not
// own stays as the user wrote it (formatting, key order, other tools' hooks).
type node struct {
	start, end int // value span: src[start:end]
	kind       byte
	keys       []member // objects, in source order
	elems      []*node  // arrays
	str        string   // strings
}

type member struct {
	key       string
	keyStart  int // the key's opening quote
	value     *node
	memberEnd int // == value.end
}

type parser struct {
	src []byte
	i   int
}

func parseSpans(src []byte) (*node, error) {
	if !json.Valid(src) {
		var v any
		err := json.Unmarshal(src, &v)
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	p := &parser{src: src}
	p.space()
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	return n, nil
}

func (p *parser) space() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value() (*node, error) {
	if p.i >= len(p.src) {
		return nil, fmt.Errorf("unexpected end")
	}
	n := &node{start: p.i, kind: p.src[p.i]}
	switch p.src[p.i] {
	case '{':
		p.i++
		for {
			p.space()
			if p.src[p.i] == '}' {
				p.i++
				break
			}
			if p.src[p.i] == ',' {
				p.i++
				p.space()
			}
			ks := p.i
			k, err := p.value()
			if err != nil {
				return nil, err
			}
			p.space()
			p.i++ // ':'
			p.space()
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.keys = append(n.keys, member{key: k.str, keyStart: ks, value: v, memberEnd: v.end})
			p.space()
		}
	case '[':
		p.i++
		for {
			p.space()
			if p.src[p.i] == ']' {
				p.i++
				break
			}
			if p.src[p.i] == ',' {
				p.i++
				p.space()
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, v)
			p.space()
		}
	case '"':
		j := p.i + 1
		for j < len(p.src) {
			if p.src[j] == '\\' {
				j += 2
				continue
			}
			if p.src[j] == '"' {
				break
			}
			j++
		}
		if err := json.Unmarshal(p.src[p.i:j+1], &n.str); err != nil {
			return nil, err
		}
		p.i = j + 1
	default:
		for p.i < len(p.src) && p.src[p.i] != ',' && p.src[p.i] != '}' && p.src[p.i] != ']' && p.src[p.i] != ' ' && p.src[p.i] != '\n' && p.src[p.i] != '\t' && p.src[p.i] != '\r' {
			p.i++
		}
	}
	n.end = p.i
	return n, nil
}

func (n *node) get(key string) *node {
	if n == nil {
		return nil
	}
	for _, m := range n.keys {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// lineIndent is the indentation of the line holding src[pos].
func lineIndent(src []byte, pos int) string {
	s := pos
	for s > 0 && src[s-1] != '\n' {
		s--
	}
	e := s
	for e < len(src) && (src[e] == ' ' || src[e] == '\t') {
		e++
	}
	return string(src[s:e])
}
