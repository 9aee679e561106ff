package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"cx/internal/cli"
	"cx/internal/recall/prompt"
	"cx/internal/recall/search"
	"cx/internal/sinks"
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
	q := search.Query{Text: strings.Join(pos, " "), Limit: limit, Project: project}
	if q.Since, err = search.ParseSince(since, time.Now()); err != nil {
		return usageError{fmt.Errorf("search: %v", err)}
	}
	if all {
		q.Project = ""
	} else if q.Project == "" {
		q.Project = cwd()
	}
	return a.withArchive(ctx, func(ar *search.Archive) error {
		hits, err := ar.Search(ctx, q)
		if err != nil {
			if errors.Is(err, search.ErrQuery) {
				return usageError{fmt.Errorf("search: %w", err)}
			}
			return fmt.Errorf("search: %w", err)
		}
		if len(hits) == 0 && !all {
			if err := unknownProject(ctx, ar, "search", project); err != nil {
				return err
			}
		}
		out := search.SearchResult{Query: q.Text, Project: q.Project, Hits: hits}
		a.render(asJSON, out, out.WriteText)
		return nil
	})
}

// unknownProject is the error of a command that found nothing for a
// project directory that does not exist and the archive does not know (a
// mistyped one), nil otherwise.
func unknownProject(ctx context.Context, ar *search.Archive, cmd, dir string) error {
	if err := cli.ExistingDir("project", dir); err != nil && !ar.Knows(ctx, dir) {
		return fmt.Errorf("%s: %w, and the archive holds nothing of its project", cmd, err)
	}
	return nil
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
	text := strings.Join(pos, " ")
	return a.withArchive(ctx, func(ar *search.Archive) error {
		items, err := prompt.Recall(ctx, ar.DB(), ar.Projects(), prompt.Request{Prompt: text, Project: project, Budget: cfg.Recall.MaxChars, MinScore: cfg.Recall.MinScore, Near: cfg.Recall.Dense,
			Remote: sinks.RemoteRecall(cfg, a.getenv)})
		if err != nil && !errors.Is(err, prompt.ErrRemote) {
			return fmt.Errorf("recall: %w", err)
		}
		if len(items) == 0 {
			if err := unknownProject(ctx, ar, "recall", project); err != nil {
				return err
			}
		}
		if err != nil {
			a.errorf("recall: %v (the local archive's items stand)", err)
		}

		out := prompt.Result{Prompt: text, Project: project, Enabled: cfg.Recall.Enabled, Items: items}
		a.render(asJSON, out, out.WriteText)
		return nil
	})
}
