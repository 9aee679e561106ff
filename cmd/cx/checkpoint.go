package main

import (
	"context"
	"fmt"
	"os"

	"cx/internal/checkpoint"
)

// ctlCheckpoint prints the deterministic checkpoint of a rollout: its JSON
// (--json: same bytes in, same bytes out) or its text view; --disk marks
// files changed since (relative to the rollout's cwd) as SUSPECT.
func (a *app) ctlCheckpoint(ctx context.Context, args []string) int {
	var asJSON, disk bool
	fs, ok := a.parseFlags("checkpoint", args, func(fs *flagSet) {
		fs.BoolVar(&asJSON, "json", false, "the checkpoint JSON")
		fs.BoolVar(&disk, "disk", false, "mark files changed on disk since as SUSPECT")
	})
	if !ok || fs.NArg() != 1 {
		a.errorf("usage: cx ctl checkpoint <rollout.jsonl> [--json] [--disk]")
		return usageExit
	}
	data, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		a.errorf("checkpoint: %v", err)
		return 1
	}
	cp := checkpoint.FromRollout(data, checkpoint.DefaultCaps)
	if asJSON {
		_, _ = a.stdout.Write(cp.JSON())
		return 0
	}
	var d checkpoint.Disk
	if disk && cp.Cwd != "" {
		d = checkpoint.OSDisk(cp.Cwd)
	}
	fmt.Fprint(a.stdout, checkpoint.View(cp, checkpoint.DefaultViewCaps, d))
	return 0
}
