package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"cx/internal/cli"
	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/readmodel"
	"cx/internal/tty"
	"cx/lifecycle"
)

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

// withLedger runs a ctl command's f with the state machine open on the
// ledger.
func (a *app) withLedger(ctx context.Context, f func(*lifecycle.Manager) error) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	m, err := lifecycle.Open(ctx, cfg, lifecycle.Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	return f(m)
}

// withViews runs a command that only reads the ledger (status, sessions,
// show): a read-only CX_HOME is read too.
func (a *app) withViews(ctx context.Context, f func(*ledger.DB) error) error {
	cfg, err := a.loadConfigToRead()
	if err != nil {
		return err
	}
	db, err := readmodel.Open(ctx, cfg.Home)
	if err != nil {
		return err
	}
	defer db.Close()
	return f(db)
}

// render prints v as one JSON document, or as text.
func (a *app) render(asJSON bool, v any, text func(io.Writer)) {
	if asJSON {
		a.printJSON(v)
		return
	}
	text(a.stdout)
}

func (a *app) printJSON(v any) {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // a <cx-context> block reads as it is
	_ = enc.Encode(v)
}

func (a *app) ctlSessions(ctx context.Context, args []string) error {
	var asJSON, all bool
	if _, err := a.args(cli.Spec{Name: "sessions", Define: func(fs *flag.FlagSet) {
		fs.BoolVar(&all, "all", false, "list the sessions that never had a turn too (--json lists every session)")
		cli.JSONFlag(&asJSON)(fs)
	}}, args); err != nil {
		return err
	}
	return a.withViews(ctx, func(db *ledger.DB) error {
		out, err := readmodel.Sessions(ctx, db)
		if err != nil {
			return fmt.Errorf("sessions: %v", err)
		}
		if asJSON {
			a.printJSON(out)
			return nil
		}
		readmodel.WriteSessions(a.stdout, out, all)
		return nil
	})
}

func (a *app) ctlStatus(ctx context.Context, args []string) error {
	var asJSON bool
	if _, err := a.args(cli.Spec{Name: "status", Define: cli.JSONFlag(&asJSON)}, args); err != nil {
		return err
	}
	return a.withViews(ctx, func(db *ledger.DB) error {
		out, err := readmodel.Status(ctx, db)
		if err != nil {
			return fmt.Errorf("status: %v", err)
		}
		a.render(asJSON, out, out.WriteText)
		return nil
	})
}

func (a *app) ctlShow(ctx context.Context, args []string) error {
	var asJSON bool
	var turn int
	var flags *flag.FlagSet
	pos, err := a.args(cli.Spec{Name: "show", Synopsis: "<session>", Min: 1, Max: 1, Define: func(fs *flag.FlagSet) {
		flags = fs
		fs.IntVar(&turn, "turn", 0, "show archived turn `N` whole (as search numbers them)")
		cli.JSONFlag(&asJSON)(fs)
	}, Check: func([]string) error {
		set := false
		flags.Visit(func(f *flag.Flag) { set = set || f.Name == "turn" })
		if set && turn < 1 {
			return fmt.Errorf("--turn %d: turns are numbered from 1", turn)
		}
		return nil
	}}, args)
	if err != nil {
		return err
	}
	if turn != 0 {
		return a.showTurn(ctx, pos[0], turn, asJSON)
	}
	return a.withViews(ctx, func(db *ledger.DB) error {
		id, err := resolveSession(ctx, db.ResolveSession, pos[0])
		if err != nil {
			return err
		}
		out, err := readmodel.Show(ctx, db, id)
		if err != nil {
			return sessionFailed("show", id, err)
		}
		a.render(asJSON, out, out.WriteText)
		return nil
	})
}

func (a *app) ctlCommit(ctx context.Context, args []string) error {
	var asJSON bool
	pos, err := a.args(cli.Spec{Name: "commit", Synopsis: "<session>", Min: 1, Max: 1, Define: cli.JSONFlag(&asJSON)}, args)
	if err != nil {
		return err
	}
	return a.withLedger(ctx, func(m *lifecycle.Manager) error {
		id, err := resolveSession(ctx, m.ResolveSession, pos[0])
		if err != nil {
			return err
		}
		out, err := m.CommitNow(ctx, id)
		if err != nil {
			return sessionFailed("commit", id, err)
		}
		a.render(asJSON, out, out.WriteText)
		return nil
	})
}

func (a *app) ctlSweep(ctx context.Context, args []string) error {
	var background, asJSON bool
	o := lifecycle.SweepOptions{}
	if _, err := a.args(cli.Spec{Name: "sweep", Define: func(fs *flag.FlagSet) {
		fs.BoolVar(&background, "background", false, "run quietly as the single background sweeper")
		fs.DurationVar(&o.Wait, "wait", time.Minute, "wait up to `D` for jobs another process is working on (0: do not wait)")
		cli.JSONFlag(&asJSON)(fs)
	}}, args); err != nil {
		return err
	}
	o.Background = background
	cfg, err := config.Load(a.getenv)
	if err != nil && !background {
		return err
	}
	if !background && !asJSON && tty.IsTerminal(a.stderr.Fd()) {
		o.Progress = lifecycle.WaitingLine(a.stderr)
		defer fmt.Fprint(a.stderr, "\r\033[K")
	}
	res, err := lifecycle.SweepNow(ctx, cfg, o)
	if err != nil {
		if !background {
			a.errorf("%v", err)
			if advice := ledger.Advice(cfg.Home, err); advice != "" {
				a.errorf("%s", advice)
			}
		}
		return exitStatus(1)
	}
	if background {
		return nil
	}
	a.render(asJSON, res.View(), res.WriteText)
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
	return a.withLedger(ctx, func(m *lifecycle.Manager) error {
		r, err := m.Outbox().Retry(ctx, ids, all)
		if err != nil {
			return fmt.Errorf("retry: %v", err)
		}
		if len(ids) > 0 && r.Parked+r.Waiting == 0 {
			return fmt.Errorf("retry: none of the jobs named is parked or waiting out a backoff (see `cx ctl status`)")
		}
		worked := 0
		if r.Parked+r.Waiting > 0 {
			if worked, err = m.Outbox().Work(ctx, nil); err != nil {
				return fmt.Errorf("retry: %v", err)
			}
		}
		if asJSON {
			a.printJSON(map[string]int{"requeued": r.Parked, "due_now": r.Waiting, "jobs_worked": worked})
			return nil
		}
		fmt.Fprintf(a.stdout, "%d parked job(s) back in the outbox, %d waiting out a backoff due now\n", r.Parked, r.Waiting)
		return nil
	})
}
