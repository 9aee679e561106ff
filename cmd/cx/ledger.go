package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"cx/history"
	"cx/hookserver"
	"cx/internal/cli"
	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/readmodel"
	"cx/internal/sinks"
	"cx/internal/tty"
	"cx/lifecycle"
)

// withLedger runs a ctl command's f with the ledger open to write and
// the state machine on it.
func (a *app) withLedger(ctx context.Context, f func(history.State) error) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	return withLedgerOf(ctx, cfg, f)
}

// withLedgerOf is withLedger for cfg.
func withLedgerOf(ctx context.Context, cfg config.Config, f func(history.State) error) error {
	db, err := ledger.Open(ctx, cfg.Home, ledger.Writer, ledger.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	return f(history.State{DB: db, Cfg: cfg, M: lifecycle.New(cfg, db, sinks.Build)})
}

// sessionFailed is a command on session id that failed.
func sessionFailed(what, id string, err error) error {
	if errors.Is(err, readmodel.ErrNoSession) {
		return fmt.Errorf("no session %s in the ledger", id)
	}
	return fmt.Errorf("%s %s: %w", what, id, err)
}

// resolveSession turns what the user typed into a session id: the id, or
// the unique prefix of one (as git takes a commit's); an error when it
// names none or several.
func resolveSession(ctx context.Context, resolve func(context.Context, string) (string, error), id string) (string, error) {
	full, err := resolve(ctx, id)
	if readmodel.NotFound(err) {
		return "", fmt.Errorf("no session %s in the ledger", id)
	}
	return full, err
}

func (a *app) ctlCommit(ctx context.Context, args []string) error {
	var asJSON bool
	pos, err := a.args(cli.Spec{Name: "commit", Synopsis: "<session>", Min: 1, Max: 1, Define: cli.JSONFlag(&asJSON)}, args)
	if err != nil {
		return err
	}
	return a.withLedger(ctx, func(st history.State) error {
		id, err := resolveSession(ctx, st.DB.ResolveSession, pos[0])
		if err != nil {
			return err
		}
		ended, err := st.M.CommitNow(ctx, id)
		if err != nil {
			return sessionFailed("commit", id, err)
		}
		out, err := readmodel.Committed(ctx, st.DB, id, ended, lifecycle.ReasonManual)
		if err != nil {
			return sessionFailed("commit", id, err)
		}
		a.render(asJSON, out, out.WriteText)
		return nil
	})
}

func (a *app) ctlSweep(ctx context.Context, args []string) error {
	var background, hostOnly, asJSON bool
	o := lifecycle.SweepOptions{}
	if _, err := a.args(cli.Spec{Name: "sweep", Define: func(fs *flag.FlagSet) {
		fs.BoolVar(&background, "background", false, "run quietly as the single background sweeper")
		fs.BoolVar(&hostOnly, "hooks", false, "with --background: answer hooks, with no sweep first")
		fs.DurationVar(&o.Wait, "wait", time.Minute, "wait up to `D` for jobs another process is working on (0: do not wait)")
		cli.JSONFlag(&asJSON)(fs)
	}}, args); err != nil {
		return err
	}
	cfg, err := config.Load(a.getenv)
	if background { // quiet: a bad config is the hook's to report
		if err := hookserver.BackgroundSweep(ctx, cfg, hostOnly); err != nil {
			return exitStatus(1)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !asJSON && tty.IsTerminal(a.stderr.Fd()) {
		o.Progress = readmodel.WaitingLine(a.stderr)
		defer fmt.Fprint(a.stderr, "\r\033[K")
	}
	var res lifecycle.SweepResult
	if err := withLedgerOf(ctx, cfg, func(st history.State) (err error) { res, err = st.M.SweepNow(ctx, o); return err }); err != nil {
		a.errorf("%v", err)
		if advice := ledger.Advice(cfg.Home, err); advice != "" {
			a.errorf("%s", advice)
		}
		return exitStatus(1)
	}
	v := readmodel.SweepView{Orphans: res.Orphans, Ended: res.Ended, Jobs: res.Jobs, Recovered: res.Recovered,
		InProgress: readmodel.HeldJobs(res.InProgress), Waited: res.Waited}
	a.render(asJSON, v.View(), v.WriteText)
	return nil
}

func (a *app) ctlRetry(ctx context.Context, args []string) error {
	var all, asJSON bool
	var ids []int64
	spec := cli.Spec{Name: "retry", Synopsis: "<job id>…", Min: 0, Max: -1, Define: func(fs *flag.FlagSet) {
		fs.BoolVar(&all, "all", false, "every parked job, and every job waiting out a backoff")
		cli.JSONFlag(&asJSON)(fs)
	}, Check: func(pos []string) error {
		if all == (len(pos) > 0) {
			return errors.New("name job ids or --all (one of the two)")
		}
		for _, s := range pos {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil || id <= 0 {
				return fmt.Errorf("%q is not a job id", s)
			}
			ids = append(ids, id)
		}
		return nil
	}}
	if _, err := a.args(spec, args); err != nil {
		return err
	}
	return a.withLedger(ctx, func(st history.State) error {
		r, err := st.M.Outbox().Retry(ctx, ids, all)
		if err != nil {
			return fmt.Errorf("retry: %v", err)
		}
		if len(ids) > 0 && r.Parked+r.Waiting == 0 {
			return fmt.Errorf("retry: none of the jobs named is parked or waiting out a backoff (see `cx ctl status`)")
		}
		worked := 0
		if r.Parked+r.Waiting > 0 {
			if worked, err = st.M.Outbox().Work(ctx, nil); err != nil {
				return fmt.Errorf("retry: %v", err)
			}
		}
		a.render(asJSON, map[string]int{"requeued": r.Parked, "due_now": r.Waiting, "jobs_worked": worked}, func(w io.Writer) {
			fmt.Fprintf(w, "%d parked job(s) back in the outbox, %d waiting out a backoff due now\n", r.Parked, r.Waiting)
		})
		return nil
	})
}
