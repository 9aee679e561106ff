package main

import (
	"errors"
	"fmt"

	"cx/internal/cli"
)

// args parses a ctl command's arguments. On a usage error it prints the
// error and the usage line on stderr and returns ok=false with exit 2; on
// --help it prints the usage on stdout and returns ok=false with exit 0.
// A command that refuses its arguments has done nothing yet.
func (a *app) args(c cli.Spec, args []string) (pos []string, code int, ok bool) {
	fs, pos, err := c.Parse(args)
	if errors.Is(err, cli.ErrHelp) {
		fmt.Fprint(a.stdout, c.Usage(fs))
		return nil, 0, false
	}
	if err != nil {
		a.errorf("ctl %s: %v", c.Name, err)
		fmt.Fprint(a.stderr, c.Usage(fs))
		return nil, usageExit, false
	}
	return pos, 0, true
}
