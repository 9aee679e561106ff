package main

import (
	"context"
	"flag"
	"fmt"

	"cx/internal/checkpoint"
	"cx/internal/cli"
)

// ctlCheckpoint prints the deterministic checkpoint of a rollout: its JSON
// (--json: same bytes in, same bytes out) or its text view; --disk marks
// files changed since (relative to the rollout's cwd) as SUSPECT.
func (a *app) ctlCheckpoint(ctx context.Context, args []string) error {
	var asJSON, disk bool
	pos, err := a.args(cli.Spec{Name: "checkpoint", Synopsis: "<rollout.jsonl>", Min: 1, Max: 1, Define: func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "the checkpoint JSON")
		fs.BoolVar(&disk, "disk", false, "mark files changed on disk since as SUSPECT")
	}}, args)
	if err != nil {
		return err
	}
	cp, err := checkpoint.FromFile(pos[0], checkpoint.DefaultCaps)
	if err != nil {
		return fmt.Errorf("checkpoint: %v", err)
	}
	if asJSON {
		_, _ = a.stdout.Write(cp.JSON())
		return nil
	}
	var d checkpoint.Disk
	if disk && cp.Cwd != "" {
		d = checkpoint.OSDisk(cp.Cwd)
	}
	fmt.Fprint(a.stdout, checkpoint.View(cp, checkpoint.DefaultViewCaps, d))
	return nil
}
