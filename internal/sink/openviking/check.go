package openviking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"cx/internal/config"
	"cx/internal/health"
	"cx/internal/ovclient"
)

// Check tells doctor whether the server the sink talks to answers, and
// whether a session route takes cx's key and identity; it says where each
// setting came from.
func (o *Sink) Check(ctx context.Context) health.Check {
	c := o.Client()
	st, src := c.Settings(), o.source
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	h, err := c.Health(hctx)
	if err != nil {
		return health.Check{Name: "openviking", Detail: fmt.Sprintf("%s (url from %s) does not answer: %v", st.URL, src["url"], err),
			Fix: "start the OpenViking server (or set [openviking] url); commits wait in the outbox meanwhile"}
	}
	server := fmt.Sprintf("%s healthy (server %s, auth %s)", st.URL, orUnknown(h.Version), orUnknown(h.AuthMode))
	settings := []string{"url from " + src["url"]}
	if st.APIKey != "" {
		settings = append(settings, "key from "+src["api_key"])
	}
	if st.Peer != "" {
		settings = append(settings, fmt.Sprintf("peer_id %q from %s", st.Peer, src["peer"]))
	}
	if (st.Account != "" || st.User != "") && h.AuthMode == "api_key" {
		settings = append(settings, "account/user not sent (an api_key server takes the identity from the key)")
	}
	_, err = c.Session(hctx, health.DoctorPrefix+"probe")
	var oe *ovclient.Error
	switch {
	case err == nil, errors.Is(err, ovclient.ErrNotFound):
		return health.Check{Name: "openviking", OK: true, Detail: fmt.Sprintf("%s; a session route takes cx's identity; %s", server, strings.Join(settings, ", "))}
	case errors.As(err, &oe) && oe.Status == 403:
		return health.Check{Name: "openviking", Detail: fmt.Sprintf("%s, but a session route refused the key: %v", server, err),
			Fix: "a ROOT key cannot write user sessions: use a user key (then `cx ctl retry --all`)"}
	case errors.As(err, &oe) && oe.Status == 401:
		return health.Check{Name: "openviking", Detail: fmt.Sprintf("%s, but it refused the key (%s): %v", server, strings.Join(settings, ", "), err),
			Fix: fmt.Sprintf("set $%s (or api_key in ~/.openviking/ovcli.conf) to a key the server accepts, then `cx ctl retry --all`", o.h.Cfg.OpenViking.APIKeyEnv)}
	case errors.As(err, &oe) && oe.Status == 400:
		return health.Check{Name: "openviking", Detail: fmt.Sprintf("%s, but a session route refused cx's request: %v", server, err),
			Fix: "a trusted-mode server needs [openviking] account and user (or OPENVIKING_ACCOUNT / OPENVIKING_USER)"}
	}
	return health.Check{Name: "openviking", Detail: fmt.Sprintf("%s: a session route failed: %v", server, err), Fix: "see the server's log"}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// PluginCheck reports the OpenViking Codex plugin in codexHome, which writes
// the same "cx-<id>" sessions as this sink; found is false when it is not
// there.
func PluginCheck(cfg config.Config, codexHome string, getenv func(string) (string, bool)) (c health.Check, found bool) {
	p := ovclient.DetectPlugin(codexHome, getenv)
	if !p.Active() {
		return health.Check{}, false
	}
	sinkOn := slices.Contains(cfg.Sinks, Name)
	where := strings.Join(p.Where, "; ")
	switch {
	case !sinkOn:
		return health.Check{Name: "ov plugin", OK: true, Detail: "the OpenViking Codex plugin is active (" + where + "); cx's openviking sink is off, so each turn reaches OpenViking once, through the plugin"}, true
	case p.CaptureOff:
		return health.Check{Name: "ov plugin", OK: true, Detail: "the OpenViking Codex plugin is installed (" + where + ") with OPENVIKING_AUTO_CAPTURE off: only cx writes the sessions"}, true
	case cfg.OpenViking.AllowWithPlugin:
		return health.Check{Name: "ov plugin", OK: true, Detail: "the OpenViking Codex plugin is active (" + where + ") and [openviking] allow_with_plugin is set: both write the same cx-<id> session, each turn twice"}, true
	}
	return health.Check{Name: "ov plugin", Detail: "the OpenViking Codex plugin is active (" + where + ") and writes the same cx-<id> sessions as cx's openviking sink; the sink is refused until you choose",
		Fix: ovclient.PluginChoices}, true
}
