package main

import (
	"bufio"
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
	"cx/internal/recall"
	"cx/internal/sinks"
	"cx/internal/tty"
	"cx/lifecycle"
	"cx/mcpserver"
)

func (a *app) ctlSearch(ctx context.Context, args []string) error {
	var asJSON, all bool
	var limit int
	var project, since string
	pos, err := a.args(cli.Spec{Name: "search", Synopsis: "<query>…", Min: 1, Max: -1, Define: func(fs *flag.FlagSet) {
		fs.IntVar(&limit, "limit", 10, "show at most `N` turns")
		fs.StringVar(&project, "project", "", "search `DIR`'s project (default: the current directory's)")
		fs.BoolVar(&all, "all", false, "search every project")
		fs.StringVar(&since, "since", "", "only turns since `WHEN`: a duration ago (36h, 7d, 2w) or a date (2006-01-02)")
		cli.JSONFlag(&asJSON)(fs)
	}, Check: func([]string) error {
		if limit < 1 {
			return fmt.Errorf("--limit %d: show at least 1 turn", limit)
		}
		return nil
	}}, args)
	if err != nil {
		return err
	}
	q := recall.Query{Text: strings.Join(pos, " "), Limit: limit, Project: project}
	if q.Since, err = recall.ParseSince(since, time.Now()); err != nil {
		return usageError{fmt.Errorf("search: %v", err)}
	}
	if all {
		q.Project = ""
	} else if q.Project == "" {
		q.Project = cwd()
	}
	return a.withArchive(ctx, func(ar *recall.Archive) error {
		hits, err := ar.Search(ctx, q)
		if err != nil {
			if errors.Is(err, recall.ErrQuery) {
				return usageError{fmt.Errorf("search: %w", err)}
			}
			return fmt.Errorf("search: %w", err)
		}
		if len(hits) == 0 && !all {
			if err := cli.ExistingDir("project", project); err != nil && !ar.Knows(ctx, project) {
				return fmt.Errorf("search: %w, and the archive holds nothing of its project", err)
			}
		}
		out := recall.SearchResult{Query: q.Text, Project: q.Project, Hits: hits}
		a.render(asJSON, out, out.WriteText)
		return nil
	})
}

// ctlRecall is `cx ctl recall <prompt>`: exactly what per-prompt recall
// would add for that prompt, each item with its score, or that nothing is
// relevant.
func (a *app) ctlRecall(ctx context.Context, args []string) error {
	var asJSON bool
	var project string
	pos, err := a.args(cli.Spec{Name: "recall", Synopsis: "<prompt>…", Min: 1, Max: -1, Define: func(fs *flag.FlagSet) {
		fs.StringVar(&project, "project", "", "recall from `DIR`'s project (default: the current directory's)")
		cli.JSONFlag(&asJSON)(fs)
	}}, args)
	if err != nil {
		return err
	}
	if project == "" {
		project = cwd()
	}
	cfg, err := a.loadConfigToRead()
	if err != nil {
		return err
	}
	prompt := strings.Join(pos, " ")
	return a.withArchive(ctx, func(ar *recall.Archive) error {
		items, err := ar.Recall(ctx, recall.PromptRequest{Prompt: prompt, Project: project, Budget: cfg.Recall.MaxChars, MinScore: cfg.Recall.MinScore,
			Remote: sinks.RemoteRecall(cfg, a.getenv)})
		if err != nil && !errors.Is(err, recall.ErrRemote) {
			return fmt.Errorf("recall: %w", err)
		}
		if len(items) == 0 {
			if err := cli.ExistingDir("project", project); err != nil && !ar.Knows(ctx, project) {
				return fmt.Errorf("recall: %w, and the archive holds nothing of its project", err)
			}
		}
		if err != nil {
			a.errorf("recall: %v (the local archive's items stand)", err)
		}

		out := recall.PromptResult{Prompt: prompt, Project: project, Enabled: cfg.Recall.Enabled, Items: items}
		a.render(asJSON, out, out.WriteText)
		return nil
	})
}

// withArchive runs f with the ledger open for recall.
func (a *app) withArchive(ctx context.Context, f func(*recall.Archive) error) error {
	cfg, err := a.loadConfigToRead()
	if err != nil {
		return err
	}
	ar, err := recall.Open(ctx, cfg.Home)
	if err != nil {
		return err
	}
	defer ar.Close()
	return f(ar)
}

// showTurn is `cx ctl show ID --turn N`.
func (a *app) showTurn(ctx context.Context, id string, n int, asJSON bool) error {
	return a.withArchive(ctx, func(ar *recall.Archive) error {
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
	if o.Since, err = recall.ParseSince(since, time.Now()); err != nil {
		return usageError{fmt.Errorf("import: %v", err)}
	}
	if sinks != "" {
		o.Sinks = strings.Split(sinks, ",")
	}
	if tty.IsTerminal(a.stderr.Fd()) && !asJSON {
		o.Progress = func(done, total int) { fmt.Fprintf(a.stderr, "\rimporting %d/%d sessions…", done, total) }
		defer fmt.Fprint(a.stderr, "\r\033[K")
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return a.withLedger(ctx, func(m *lifecycle.Manager) error {
		res, err := history.Import(ctx, m, o)
		if err != nil {
			return fmt.Errorf("import: %v", err)
		}
		a.render(asJSON, res, func(w io.Writer) { res.WriteText(w, dryRun, m.Cfg.Lifecycle.ActiveWindow.Duration) })
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
	return a.withLedger(ctx, func(m *lifecycle.Manager) error {
		ids := pos
		if len(pos) == 1 {
			id, err := resolveSession(ctx, m.ResolveSession, pos[0])
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
			if ids, err = history.ProjectSessionsToForget(ctx, m, project); err != nil {
				return fmt.Errorf("forget: %v", err)
			}
			if len(ids) == 0 && !asJSON {
				fmt.Fprintf(a.stdout, "no session of %s's project in the ledger: nothing to forget\n", project)
				return nil
			}
		}
		if !yes {
			if !tty.IsTerminal(a.stdin.Fd()) {
				return fmt.Errorf("forget: %s would be forgotten; confirm with --yes (stdin is not a terminal)", cli.Count(len(ids), "session"))
			}
			fmt.Fprintf(a.stderr, "forget %s (%s)? Their archives, checkpoints and search index rows are removed. [y/N] ", cli.Count(len(ids), "session"), strings.Join(ids[:min(len(ids), 3)], ", "))
			answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
			if ans := strings.ToLower(strings.TrimSpace(answer)); ans != "y" && ans != "yes" {
				fmt.Fprintln(a.stderr, "nothing forgotten")
				return nil // the user's answer, not a failure
			}
		}
		out := a.stdout
		if asJSON {
			out = nil
		}
		r := history.ForgetAll(ctx, m, ids, history.ForgetSays(out, a.errorf))
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

// ctlMCP is `cx mcp` (and `cx ctl mcp`): the MCP server Codex starts.
func (a *app) ctlMCP(ctx context.Context, args []string) error {
	if _, err := a.args(cli.Spec{Name: "mcp"}, args); err != nil {
		return err
	}
	cfg, err := a.loadConfigToRead()
	if err != nil {
		return err
	}
	// No signal handling: SIGTERM or SIGINT ends a read-only server at once.
	err = mcpserver.Serve(ctx, mcpserver.Options{Home: cfg.Home, Cwd: cwd(), Version: cli.Version(version)}, a.stdin, a.stdout)
	if err != nil {
		return err
	}
	return nil
}
