package main

import (
	"errors"
	"fmt"

	"cx/internal/cli"
)

// args parses a ctl command's arguments. On a usage error it prints the
// error and the usage line on stderr and returns exit status 2; on --help
// it prints the usage on stdout and returns exit status 0 (an error still:
// the command stops there). A command that refuses its arguments has done
// nothing yet.
func (a *app) args(c cli.Spec, args []string) (pos []string, err error) {
	fs, pos, err := c.Parse(args)
	if errors.Is(err, cli.ErrHelp) {
		fmt.Fprint(a.stdout, c.Usage(fs))
		return nil, exitStatus(0)
	}
	if err != nil {
		a.errorf("ctl %s: %v", c.Name, err)
		fmt.Fprint(a.stderr, c.Usage(fs))
		return nil, exitStatus(usageExit)
	}
	return pos, nil
}
