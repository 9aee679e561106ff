package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"cx/internal/cli"
	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/readmodel"
	"cx/internal/tty"
	"cx/lifecycle"
)

// sessionFailed reports a command on session id that failed.
func (a *app) sessionFailed(what, id string, err error) int {
	if errors.Is(err, readmodel.ErrNoSession) {
		a.errorf("no session %s in the ledger", id)
	} else {
		a.errorf("%s %s: %v", what, id, err)
	}
	return 1
}

// resolveSession turns what the user typed into a session id: the id, or
// the unique prefix of one (as git takes a commit's); false, reported,
// when it names none or several.
func (a *app) resolveSession(ctx context.Context, resolve func(context.Context, string) (string, error), id string) (string, bool) {
	full, err := resolve(ctx, id)
	switch {
	case err == nil:
		return full, true
	case errors.Is(err, ledger.ErrNotFound):
		a.errorf("no session %s in the ledger", id)
	default:
		a.errorf("%v", err)
	}
	return "", false
}

// withManager runs a ctl command's f with the ledger open.
func (a *app) withManager(ctx context.Context, f func(*lifecycle.Manager) int) int {
	return a.withLedger(ctx, false, f)
}

// withReader runs a command that only reads the ledger: it reads a
// read-only CX_HOME too.
func (a *app) withReader(ctx context.Context, f func(*lifecycle.Manager) int) int {
	return a.withLedger(ctx, true, f)
}

func (a *app) withLedger(ctx context.Context, readOnly bool, f func(*lifecycle.Manager) int) int {
	cfg, err := a.loadConfig()
	if err != nil {
		a.errorf("%v", err)
		return 1
	}
	var m *lifecycle.Manager
	if readOnly {
		m, err = lifecycle.OpenReader(ctx, cfg)
	} else {
		m, err = lifecycle.Open(ctx, cfg, lifecycle.Options{})
	}
	if err != nil {
		a.errorf("%v", err)
		return 1
	}
	defer m.Close()
	return f(m)
}

func (a *app) printJSON(v any) {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // a <cx-context> block reads as it is
	_ = enc.Encode(v)
}

func (a *app) ctlSessions(ctx context.Context, args []string) int {
	var asJSON bool
	if _, code, ok := a.args(cli.Spec{Name: "sessions", Define: cli.JSONFlag(&asJSON)}, args); !ok {
		return code
	}
	return a.withReader(ctx, func(m *lifecycle.Manager) int {
		out, err := readmodel.Sessions(ctx, m.DB)
		if err != nil {
			a.errorf("sessions: %v", err)
			return 1
		}
		if asJSON {
			a.printJSON(out)
			return 0
		}
		readmodel.WriteSessions(a.stdout, out)
		return 0
	})
}

func (a *app) ctlStatus(ctx context.Context, args []string) int {
	var asJSON bool
	if _, code, ok := a.args(cli.Spec{Name: "status", Define: cli.JSONFlag(&asJSON)}, args); !ok {
		return code
	}
	return a.withReader(ctx, func(m *lifecycle.Manager) int {
		out, err := readmodel.Status(ctx, m.DB)
		if err != nil {
			a.errorf("status: %v", err)
			return 1
		}
		if asJSON {
			a.printJSON(out)
			return 0
		}
		out.WriteText(a.stdout)
		return 0
	})
}

func (a *app) ctlShow(ctx context.Context, args []string) int {
	var asJSON bool
	var turn int
	var flags *flag.FlagSet
	pos, code, ok := a.args(cli.Spec{Name: "show", Synopsis: "<session>", Min: 1, Max: 1, Define: func(fs *flag.FlagSet) {
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
	if !ok {
		return code
	}
	if turn != 0 {
		return a.showTurn(ctx, pos[0], turn, asJSON)
	}
	return a.withReader(ctx, func(m *lifecycle.Manager) int {
		id, ok := a.resolveSession(ctx, m.DB.ResolveSession, pos[0])
		if !ok {
			return 1
		}
		out, err := readmodel.Show(ctx, m.DB, id)
		if err != nil {
			return a.sessionFailed("show", id, err)
		}
		if asJSON {
			a.printJSON(out)
			return 0
		}
		out.WriteText(a.stdout)
		return 0
	})
}

func (a *app) ctlCommit(ctx context.Context, args []string) int {
	var asJSON bool
	pos, code, ok := a.args(cli.Spec{Name: "commit", Synopsis: "<session>", Min: 1, Max: 1, Define: cli.JSONFlag(&asJSON)}, args)
	if !ok {
		return code
	}
	return a.withManager(ctx, func(m *lifecycle.Manager) int {
		id, ok := a.resolveSession(ctx, m.DB.ResolveSession, pos[0])
		if !ok {
			return 1
		}
		out, err := m.CommitNow(ctx, id)
		if err != nil {
			return a.sessionFailed("commit", id, err)
		}
		if asJSON {
			a.printJSON(out)
			return 0
		}
		s := out.Session
		if out.Ended {
			fmt.Fprintf(a.stdout, "%s: generation %d ended (%s), status %s\n", s.ID, s.Generation, lifecycle.ReasonManual, s.Status)
		} else {
			fmt.Fprintf(a.stdout, "%s: nothing live to end (status %s, generation %d)\n", s.ID, s.Status, s.Generation)
		}
		return 0
	})
}

func (a *app) ctlSweep(ctx context.Context, args []string) int {
	var background, asJSON bool
	o := lifecycle.SweepOptions{}
	if _, code, ok := a.args(cli.Spec{Name: "sweep", Define: func(fs *flag.FlagSet) {
		fs.BoolVar(&background, "background", false, "run quietly as the single background sweeper")
		fs.DurationVar(&o.Wait, "wait", time.Minute, "wait up to `D` for jobs another process is working on (0: do not wait)")
		cli.JSONFlag(&asJSON)(fs)
	}}, args); !ok {
		return code
	}
	o.Background = background
	cfg, err := config.Load(a.getenv)
	if err != nil && !background {
		a.errorf("%v", err)
		return 1
	}
	if !background && !asJSON && tty.IsTerminal(a.stderr.Fd()) {
		o.Progress = func(waiting []readmodel.JobView, waited time.Duration) {
			j := waiting[0]
			fmt.Fprintf(a.stderr, "\r\033[Kwaiting %ds for %d job(s) in progress elsewhere: #%d %s %s → %s (%s)", int(waited.Seconds()), len(waiting), j.ID, j.Kind, j.SessionID, j.Target(), readmodel.LeaseHolder(j.LeaseOwner))
		}
		defer fmt.Fprint(a.stderr, "\r\033[K")
	}
	res, err := lifecycle.SweepNow(ctx, cfg, o)
	if err != nil {
		if !background {
			a.errorf("%v", err)
			if advice := lifecycle.LedgerAdvice(cfg, err); advice != "" {
				a.errorf("%s", advice)
			}
		}
		return 1
	}
	if background {
		return 0
	}
	if asJSON {
		inProgress := res.InProgress
		if inProgress == nil {
			inProgress = []readmodel.JobView{}
		}
		a.printJSON(map[string]any{"orphan_runs": res.Orphans, "generations_ended": res.Ended, "jobs_worked": res.Jobs, "sessions_recovered": res.Recovered,
			"waited_ms": res.Waited.Milliseconds(), "in_progress": inProgress})
		return 0
	}
	fmt.Fprintf(a.stdout, "orphan runs: %d, generations ended: %d, jobs worked: %d\n", res.Orphans, res.Ended, res.Jobs)
	if res.Recovered > 0 {
		fmt.Fprintf(a.stdout, "recorded %d session(s) a run could not record (from their rollouts)\n", res.Recovered)
	}
	if n := len(res.InProgress); n > 0 {
		fmt.Fprintf(a.stdout, "%d job(s) still in progress elsewhere after %s (`cx ctl sweep` again, or `cx ctl status`):\n", n, res.Waited.Round(time.Second))
		for _, j := range res.InProgress {
			fmt.Fprintf(a.stdout, "  #%d %s %s g%d → %s, by %s until %s\n", j.ID, j.Kind, j.SessionID, j.Generation, j.Target(), readmodel.LeaseHolder(j.LeaseOwner), *j.LeaseUntil)
		}
	}
	return 0
}

func (a *app) ctlRetry(ctx context.Context, args []string) int {
	var all, asJSON bool
	var ids []int64
	spec := cli.Spec{Name: "retry", Synopsis: "<job id>…", Min: 0, Max: -1, Define: func(fs *flag.FlagSet) {
		fs.BoolVar(&all, "all", false, "every parked job")
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
	if _, code, ok := a.args(spec, args); !ok {
		return code
	}
	return a.withManager(ctx, func(m *lifecycle.Manager) int {
		n, err := m.Retry(ctx, ids, all)
		if err != nil {
			a.errorf("retry: %v", err)
			return 1
		}
		if len(ids) > 0 && n == 0 {
			a.errorf("retry: none of the jobs named is parked (see `cx ctl status`)")
			return 1
		}
		worked := 0
		if n > 0 {
			if worked, err = m.WorkOutbox(ctx, nil); err != nil {
				a.errorf("retry: %v", err)
				return 1
			}
		}
		if asJSON {
			a.printJSON(map[string]int{"requeued": n, "jobs_worked": worked})
			return 0
		}
		fmt.Fprintf(a.stdout, "%d parked job(s) back in the outbox\n", n)
		return 0
	})
}
