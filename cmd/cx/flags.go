package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// ctlArgs is what one `cx ctl` command accepts: its positional arguments
// (their synopsis and how many) and its flags.
type ctlArgs struct {
	name     string
	synopsis string // positional arguments, e.g. "<session>"
	min, max int    // positional count; max < 0: any number
	define   func(fs *flag.FlagSet)
	// check, when set, validates the parsed flags and positionals; its
	// error is a usage error like the parser's own.
	check func(pos []string) error
}

// errHelp is returned for -h/--help: usage printed on stdout, exit 0.
var errHelp = errors.New("help requested")

// parse reads args as flags and positionals in any order: `--flag value`,
// `--flag=value`, `-flag`, bool flags without a value, and `--` ending the
// flags. Unknown flags, missing values and the wrong number of positionals
// are errors. It is the one parser of every `cx ctl` command, so the order
// a user types things in never changes what they mean.
func (c ctlArgs) parse(args []string) (*flag.FlagSet, []string, error) {
	fs := flag.NewFlagSet("cx ctl "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if c.define != nil {
		c.define(fs)
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
			return fs, nil, errHelp
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
	case len(pos) < c.min:
		return fs, nil, fmt.Errorf("missing %s", c.synopsis)
	case c.max >= 0 && len(pos) > c.max:
		return fs, nil, fmt.Errorf("unexpected argument %q", pos[c.max])
	}
	if c.check != nil {
		if err := c.check(pos); err != nil {
			return fs, nil, err
		}
	}
	return fs, pos, nil
}

// usage is the command's usage — its synopsis line and its flags — from
// the flag set parse defined (defining them again would reset the values).
func (c ctlArgs) usage(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: cx ctl %s", c.name)
	if c.synopsis != "" {
		b.WriteString(" " + c.synopsis)
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

// args parses a ctl command's arguments. On a usage error it prints the
// error and the usage line on stderr and returns ok=false with exit 2; on
// --help it prints the usage on stdout and returns ok=false with exit 0.
// A command that refuses its arguments has done nothing yet.
func (a *app) args(c ctlArgs, args []string) (pos []string, code int, ok bool) {
	fs, pos, err := c.parse(args)
	if errors.Is(err, errHelp) {
		fmt.Fprint(a.stdout, c.usage(fs))
		return nil, 0, false
	}
	if err != nil {
		a.errorf("ctl %s: %v", c.name, err)
		fmt.Fprint(a.stderr, c.usage(fs))
		return nil, usageExit, false
	}
	return pos, 0, true
}
