package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"cx/internal/cli"
	"cx/internal/ledger"
	"cx/internal/readmodel"
	"cx/internal/recall/search"
)

// withArchive runs f with the ledger open to read, for recall.
func (a *app) withArchive(ctx context.Context, f func(*search.Archive) error) error {
	return a.withViews(ctx, func(db *ledger.DB) error {
		cfg, _ := a.loadConfigToRead() // read once: withViews did
		return f(search.NewArchive(db, cfg.Home))
	})
}

// withViews runs a command that only reads the ledger (status, sessions,
// show): a read-only CX_HOME is read too.
func (a *app) withViews(ctx context.Context, f func(*ledger.DB) error) error {
	cfg, err := a.loadConfigToRead()
	if err != nil {
		return err
	}
	db, err := ledger.Open(ctx, cfg.Home, ledger.Reader, ledger.Options{})
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

func (a *app) ctlSessions(ctx context.Context, args []string) error {
	var asJSON, all bool
	var limit uint
	if _, err := a.args(cli.Spec{Name: "sessions", Define: func(fs *flag.FlagSet) {
		fs.BoolVar(&all, "all", false, "list the sessions that never had a turn too (--json lists every session)")
		fs.UintVar(&limit, "limit", 0, "list the `N` most recent sessions (their subagents under them); 0 lists all")
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
			out = readmodel.Latest(out, int(limit))
		}
		a.render(asJSON, out, func(w io.Writer) { readmodel.WriteSessions(w, out, all, int(limit)) })
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

// showTurn is `cx ctl show ID --turn N`.
func (a *app) showTurn(ctx context.Context, id string, n int, asJSON bool) error {
	return a.withArchive(ctx, func(ar *search.Archive) error {
		id, err := resolveSession(ctx, ar.ResolveSession, id)
		if err != nil {
			return err
		}
		v, err := ar.Turn(ctx, id, n)
		if err != nil {
			return fmt.Errorf("show: %v", err)
		}
		a.render(asJSON, v, func(w io.Writer) { fmt.Fprint(w, v.Text()) })
		return nil
	})
}
