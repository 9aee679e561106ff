package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"cx/history"
	"cx/internal/cli"
	"cx/internal/codex"
	"cx/internal/recall/search"
	"cx/internal/tty"
)

func (a *app) ctlImport(ctx context.Context, args []string) error {
	var asJSON, dryRun bool
	var since, codexHome, sinks string
	if _, err := a.args(cli.Spec{Name: "import", Define: func(fs *flag.FlagSet) {
		fs.StringVar(&since, "since", "", "only sessions written since `WHEN`: a date (2006-01-02) or a duration ago (30d)")
		fs.StringVar(&codexHome, "codex-home", "", "the Codex home `DIR` to import from (default: the one cx runs Codex with)")
		fs.StringVar(&sinks, "sinks", "", "commit to these `SINKS` (comma-separated; default: local, the archive only)")
		fs.BoolVar(&dryRun, "dry-run", false, "count what would be imported; change nothing")
		cli.JSONFlag(&asJSON)(fs)
	}}, args); err != nil {
		return err
	}
	o := history.ImportOptions{CodexHome: codexHome, DryRun: dryRun}
	if o.CodexHome == "" {
		o.CodexHome = codex.Home(a.getenv)
	}
	// A home that is not there is a mistyped path or a Codex never run,
	// not a home with nothing to import (one without sessions/ yet is).
	if fi, err := os.Stat(o.CodexHome); err != nil || !fi.IsDir() {
		return fmt.Errorf("import: no Codex home at %s (a directory): nothing to import from", o.CodexHome)
	}
	var err error
	if o.Since, err = search.ParseSince(since, time.Now()); err != nil {
		return usageError{fmt.Errorf("import: %v", err)}
	}
	if sinks != "" {
		o.Sinks = strings.Split(sinks, ",")
	}
	show, clearProgress := cli.ProgressLine(a.stderr, "importing %d/%d sessions…")
	if tty.IsTerminal(a.stderr.Fd()) && !asJSON {
		o.Progress = func(done, total int) { show(done, total) }
		defer clearProgress() // and before the summary, on the same terminal
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return a.withLedger(ctx, func(st history.State) error {
		res, err := history.Import(ctx, st, o)
		clearProgress()
		if err != nil {
			return fmt.Errorf("import: %v", err)
		}
		a.render(asJSON, res, func(w io.Writer) { res.WriteText(w, dryRun, st.Cfg.Lifecycle.ActiveWindow.Duration) })
		return nil
	})
}

func (a *app) ctlForget(ctx context.Context, args []string) error {
	var asJSON, yes bool
	var project string
	pos, err := a.args(cli.Spec{Name: "forget", Synopsis: "<session>", Min: 0, Max: 1, Define: func(fs *flag.FlagSet) {
		fs.StringVar(&project, "project", "", "forget every session of `DIR`'s project")
		fs.BoolVar(&yes, "yes", false, "do not ask")
		cli.JSONFlag(&asJSON)(fs)
	}, Check: func(pos []string) error {
		if (project == "") == (len(pos) == 0) {
			return errors.New("name a session or --project DIR (one of the two)")
		}
		return nil
	}}, args)
	if err != nil {
		return err
	}
	return a.withLedger(ctx, func(st history.State) error {
		ids := pos
		if len(pos) == 1 {
			id, err := resolveSession(ctx, st.DB.ResolveSession, pos[0])
			if err != nil && asJSON {
				a.errorf("%v", err)
				a.printJSON(history.ForgetReport{Forgotten: map[string]int{}, Failed: 1})
				return exitStatus(1)
			} else if err != nil {
				return err
			}
			ids = []string{id}
		}
		if project != "" {
			var err error
			if ids, err = history.ProjectSessionsToForget(ctx, st, project); err != nil {
				return fmt.Errorf("forget: %v", err)
			}
			if len(ids) == 0 && !asJSON {
				fmt.Fprintf(a.stdout, "no session of %s's project in the ledger: nothing to forget\n", project)
				return nil
			}
		}
		if !yes {
			all, _ := history.WithChildren(ctx, st.DB, ids) // a session's subagents go with it
			if !tty.IsTerminal(a.stdin.Fd()) {
				return fmt.Errorf("forget: %s would be forgotten; confirm with --yes (stdin is not a terminal)", cli.Count(len(all), "session"))
			}
			if !cli.Confirm(a.stdin, a.stderr, fmt.Sprintf("forget %s (%s)? Their archives, checkpoints and search index rows are removed.", cli.Count(len(all), "session"), strings.Join(all[:min(len(all), 3)], ", "))) {
				fmt.Fprintln(a.stderr, "nothing forgotten")
				return nil // the user's answer, not a failure
			}
		}
		out := a.stdout
		if asJSON {
			out = nil
		}
		r := history.ForgetAll(ctx, st, ids, history.ForgetSays(out, a.errorf))
		if r.ScrubErr != nil {
			a.errorf("forget: the rows are gone, but copies may remain in the ledger's files: %v; run the same forget again once other cx processes are done", r.ScrubErr)
		}
		if asJSON {
			a.printJSON(r)
		}
		if r.Failed > 0 {
			return exitStatus(1)
		}
		return nil
	})
}
