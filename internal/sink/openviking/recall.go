package openviking

import (
	"context"
	"fmt"
	"strings"

	"cx/internal/config"
	"cx/internal/ovclient"
	"cx/internal/recall/prompt"
	"cx/internal/rollout"
)

// remoteMinScore is the server score below which a memory is not given
// (the server's scores are similarities, 0 to 1).
const remoteMinScore = 0.35

// maxMemoryChars bounds one memory's text, as the plugin's digest does.
const maxMemoryChars = 500

// clientFor is the OpenViking client cx's config and the user's own
// OpenViking settings describe.
func clientFor(cfg config.Config, getenv func(string) (string, bool)) (*ovclient.Client, ovclient.Source) {
	c := cfg.OpenViking
	home, _ := config.UserHome(getenv) // ~/.openviking/ovcli.conf
	s, src := ovclient.Resolve(ovclient.Settings{URL: c.URL, Account: c.Account, User: c.User, Peer: c.Peer, Timeout: c.Timeout.Duration},
		c.APIKeyEnv, getenv, home)
	return ovclient.New(s), src
}

// RecallSource is per-prompt recall's remote half where the OpenViking
// sink is configured: the server's memory search (POST
// /api/v1/search/find, as the OpenViking Codex plugin's auto-recall asks
// it), its leaf memories above remoteMinScore, each an item headed by its
// URI. nil when the sink is not configured.
func RecallSource(cfg config.Config, getenv func(string) (string, bool)) prompt.Remote {
	configured := false
	for _, s := range cfg.Sinks {
		configured = configured || s == Name
	}
	if !configured {
		return nil
	}
	client, _ := clientFor(cfg, getenv)
	return func(ctx context.Context, query string, limit int) ([]prompt.Item, error) {
		mems, err := client.Find(ctx, query, limit*2, remoteMinScore)
		if err != nil {
			return nil, err
		}
		var items []prompt.Item
		for _, m := range mems {
			text := strings.TrimSpace(m.Abstract)
			if text == "" {
				text = strings.TrimSpace(m.Overview)
			}
			if (m.Level != nil && *m.Level != 2) || m.Score < remoteMinScore || text == "" || m.URI == "" {
				continue // a directory's summary, or nothing to give
			}
			head := fmt.Sprintf("[OpenViking memory %s", m.URI)
			if m.Category != "" {
				head += " (" + m.Category + ")"
			}
			head += "]\n"
			items = append(items, prompt.Item{Source: Name, Session: m.URI, Score: m.Score,
				Text: head + rollout.OneLine(text, maxMemoryChars-len([]rune(head)))})
			if len(items) == limit {
				break
			}
		}
		return items, nil
	}
}
