// Package cli is cx's command-line plumbing, free of cx's logic: the one
// argument parser every `cx ctl` command uses (flags and positionals in any
// order), the version view, and how a count is said.
package cli

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Spec is what one `cx ctl` command accepts: its positional arguments
// (their synopsis and how many) and its flags.
type Spec struct {
	Name     string
	Synopsis string // positional arguments, e.g. "<session>"
	Min, Max int    // positional count; Max < 0: any number
	Define   func(fs *flag.FlagSet)
	// Check, when set, validates the parsed flags and positionals; its
	// error is a usage error like the parser's own.
	Check func(pos []string) error
}

// ErrHelp is returned for -h/--help: usage printed on stdout, exit 0.
var ErrHelp = errors.New("help requested")

// Parse reads args as flags and positionals in any order: `--flag value`,
// `--flag=value`, `-flag`, bool flags without a value, and `--` ending the
// flags. Unknown flags, missing values and the wrong number of positionals
// are errors. It is the one parser of every `cx ctl` command, so the order
// a user types things in never changes what they mean.
func (c Spec) Parse(args []string) (*flag.FlagSet, []string, error) {
	fs := flag.NewFlagSet("cx ctl "+c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if c.Define != nil {
		c.Define(fs)
	}
	var pos []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			pos = append(pos, arg)
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
		value, hasValue := "", false
		if k, v, ok := strings.Cut(name, "="); ok {
			name, value, hasValue = k, v, true
		}
		if name == "h" || name == "help" {
			return fs, nil, ErrHelp
		}
		f := fs.Lookup(name)
		if f == nil || name == "" {
			return fs, nil, fmt.Errorf("unknown flag %s", arg)
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			if !hasValue {
				value = "true"
			}
		} else if !hasValue {
			if i+1 >= len(args) {
				return fs, nil, fmt.Errorf("flag --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			return fs, nil, fmt.Errorf("invalid value %q for --%s: %v", value, name, err)
		}
	}
	switch {
	case len(pos) < c.Min:
		return fs, nil, fmt.Errorf("missing %s", c.Synopsis)
	case c.Max >= 0 && len(pos) > c.Max:
		return fs, nil, fmt.Errorf("unexpected argument %q", pos[c.Max])
	}
	if c.Check != nil {
		if err := c.Check(pos); err != nil {
			return fs, nil, err
		}
	}
	return fs, pos, nil
}

// ExistingDir checks a flag naming a directory: "" (not given) or a
// directory that exists. A mistyped path is said so, never answered as a
// place with nothing in it.
func ExistingDir(flagName, path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("--%s %s: no such directory", flagName, path)
	case !fi.IsDir():
		return fmt.Errorf("--%s %s: not a directory", flagName, path)
	}
	return nil
}

// Usage is the command's usage — its synopsis line and its flags — from
// the flag set parse defined (defining them again would reset the values).
func (c Spec) Usage(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: cx ctl %s", c.Name)
	if c.Synopsis != "" {
		b.WriteString(" " + c.Synopsis)
	}
	fs.VisitAll(func(f *flag.Flag) {
		name, _ := flag.UnquoteUsage(f)
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			fmt.Fprintf(&b, " [--%s]", f.Name)
		} else {
			fmt.Fprintf(&b, " [--%s %s]", f.Name, strings.ToUpper(orDefault(name, "value")))
		}
	})
	b.WriteString("\n")
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		left := "--" + f.Name
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
			left += " " + strings.ToUpper(orDefault(name, "value"))
		}
		fmt.Fprintf(&b, "  %-22s %s\n", left, text)
	})
	return b.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Count is n and a noun, singular or plural as n asks ("1 turn", "2
// turns"); nouns whose plural is not noun+"s" are not used.
func Count(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// JSONFlag defines --json, which every ctl command has.
func JSONFlag(p *bool) func(*flag.FlagSet) {
	return func(fs *flag.FlagSet) { fs.BoolVar(p, "json", false, "print one JSON document") }
}

// VersionView is `cx ctl version`: cx's version and the Codex it would run
// (or why it would run none).
type VersionView struct {
	Version      string `json:"version"`
	Codex        string `json:"codex,omitempty"`
	CodexVersion string `json:"codex_version,omitempty"`
	CodexError   string `json:"codex_error,omitempty"`
}

// WriteText is the version for a terminal.
func (v VersionView) WriteText(w io.Writer) {
	fmt.Fprintf(w, "cx %s\n", v.Version)
	if v.CodexError != "" {
		fmt.Fprintf(w, "codex: %s\n", v.CodexError)
	} else {
		fmt.Fprintf(w, "codex %s (%s)\n", v.CodexVersion, v.Codex)
	}
}

// Confirm asks question (with " [y/N] ") on out and reads the answer from
// in: true for "y" or "yes" in any case, false for anything else.
func Confirm(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprint(out, question+" [y/N] ")
	answer, _ := bufio.NewReader(in).ReadString('\n')
	ans := strings.ToLower(strings.TrimSpace(answer))
	return ans == "y" || ans == "yes"
}

// ProgressLine is a line a command redraws on a terminal while it works
// (show), and clear, which takes it away before the result is printed (a
// second clear does nothing, so it may also be deferred).
func ProgressLine(w io.Writer, format string) (show func(a ...any), clear func()) {
	shown := false
	return func(a ...any) {
			shown = true
			fmt.Fprintf(w, "\r"+format, a...)
		}, func() {
			if shown {
				fmt.Fprint(w, "\r\033[K")
				shown = false
			}
		}
}
