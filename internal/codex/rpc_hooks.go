package codex

import (
	"context"
	"fmt"
	"syscall"
)

var syscallTERM = syscall.SIGTERM

// Hook is one hook handler as Codex lists it (hooks/list).
type Hook struct {
	Key         string `json:"key"`
	EventName   string `json:"eventName"`
	Command     string `json:"command"`
	CurrentHash string `json:"currentHash"`
	TrustStatus string `json:"trustStatus"` // managed | untrusted | trusted | modified
	Enabled     bool   `json:"enabled"`
	Source      string `json:"source"`
	SourcePath  string `json:"sourcePath"`
	TimeoutSec  int    `json:"timeoutSec"`
}

// ListHooks returns the hooks Codex sees for cwd.
func (c *Client) ListHooks(ctx context.Context, cwd string) ([]Hook, error) {
	var res struct {
		Data []struct {
			Cwd    string `json:"cwd"`
			Hooks  []Hook `json:"hooks"`
			Errors []struct {
				Message string `json:"message"`
				Path    string `json:"path"`
			} `json:"errors"`
		} `json:"data"`
	}
	params := map[string]any{}
	if cwd != "" {
		params["cwds"] = []string{cwd}
	}
	if err := c.Call(ctx, "hooks/list", params, &res); err != nil {
		return nil, err
	}
	var out []Hook
	for _, e := range res.Data {
		for _, er := range e.Errors {
			return nil, fmt.Errorf("codex reports a hooks problem in %s: %s", er.Path, er.Message)
		}
		out = append(out, e.Hooks...)
	}
	return out, nil
}

// Trust records trust for the given hooks (key → current hash) the way the
// Codex TUI's "Trust" does: an upsert into hooks.state of the user config,
// touching no other hook's state.
func (c *Client) Trust(ctx context.Context, hooks []Hook) error {
	if len(hooks) == 0 {
		return nil
	}
	state := map[string]any{}
	for _, h := range hooks {
		state[h.Key] = map[string]any{"trusted_hash": h.CurrentHash}
	}
	return c.Call(ctx, "config/batchWrite", map[string]any{
		"edits": []map[string]any{{"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}},
	}, nil)
}
