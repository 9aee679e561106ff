package cli

import (
	"flag"
	"reflect"
	"strings"
	"testing"
)

func TestCtlArgsParse(t *testing.T) {
	var home string
	var dry, js bool
	spec := Spec{Name: "x", Synopsis: "<a>", Min: 0, Max: 1, Define: func(fs *flag.FlagSet) {
		fs.StringVar(&home, "codex-home", "", "`DIR`")
		fs.BoolVar(&dry, "dry-run", false, "")
		fs.BoolVar(&js, "json", false, "")
	}}
	cases := []struct {
		args    []string
		home    string
		dry, js bool
		pos     []string
		err     string
	}{
		{args: []string{"--codex-home", "/x", "--dry-run"}, home: "/x", dry: true},
		{args: []string{"--dry-run", "--codex-home", "/x"}, home: "/x", dry: true},
		{args: []string{"--codex-home=/x", "--json"}, home: "/x", js: true},
		{args: []string{"-codex-home", "/x", "A"}, home: "/x", pos: []string{"A"}},
		{args: []string{"A", "--json"}, js: true, pos: []string{"A"}},
		{args: []string{"--json=false", "A"}, pos: []string{"A"}},
		{args: []string{"--", "--json"}, pos: []string{"--json"}},
		{args: []string{"--codex-home", "/x", "--json", "A"}, home: "/x", js: true, pos: []string{"A"}},
		{args: []string{"--bogus"}, err: "unknown flag --bogus"},
		{args: []string{"--codex-home"}, err: "needs a value"},
		{args: []string{"A", "B"}, err: `unexpected argument "B"`},
		{args: []string{"--json=maybe"}, err: "invalid value"},
		{args: []string{"--help"}, err: "help requested"},
	}
	for _, c := range cases {
		home, dry, js = "", false, false
		_, pos, err := spec.Parse(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || home != c.home || dry != c.dry || js != c.js || !reflect.DeepEqual(pos, c.pos) && len(pos)+len(c.pos) > 0 {
			t.Errorf("%q: home %q dry %v json %v pos %q err %v; want %q %v %v %q", c.args, home, dry, js, pos, err, c.home, c.dry, c.js, c.pos)
		}
	}
	if _, _, err := (Spec{Name: "y", Min: 1, Max: 1}).Parse(nil); err == nil {
		t.Error("a missing argument was accepted")
	}
}
