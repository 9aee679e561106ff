package hookcfg

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"cx/internal/codex"
	"cx/internal/health"
	"cx/internal/hookwire"
)

// Active reports whether cx's hooks will run in this Codex home: every
// entry installed for this cx binary and, where Codex requires trust
// (in.Trust), trust recorded for them — read from config.toml, without
// starting Codex (it runs before every launch; `cx ctl doctor` asks Codex).
// When not, it says why.
func (in *Installer) Active(ctx context.Context) (bool, string) {
	st, err := in.inspectFile()
	switch {
	case err != nil:
		return false, err.Error()
	case len(st.Missing) > 0:
		return false, "cx's hooks are not installed"
	case len(st.WrongPath) > 0:
		return false, "cx's hooks run another cx binary"
	}
	if in.Trust {
		data, _ := os.ReadFile(in.ConfigPath())
		if !codex.TrustRecorded(string(data), in.HooksPath(), "SessionStart") {
			return false, "cx's hooks are not trusted"
		}
	}
	return true, ""
}

// Checks are doctor's findings on cx's hooks: installed (for this cx
// binary), trusted (asked of Codex, where it has trust) and firing (the
// installed SessionStart command run the way Codex runs it).
func (in *Installer) Checks(ctx context.Context, cwd string) []health.Check {
	var out []health.Check
	st, err := in.inspect(ctx)
	switch {
	case err != nil:
		out = append(out, health.Check{Name: "hooks installed", Detail: err.Error(), Fix: "fix the file, then `cx ctl install`"})
	case len(st.Missing) > 0:
		out = append(out, health.Check{Name: "hooks installed", Detail: fmt.Sprintf("%s lacks cx's %s hook(s)", in.HooksPath(), strings.Join(st.Missing, ", ")), Fix: "cx ctl install"})
	case len(st.WrongPath) > 0:
		out = append(out, health.Check{Name: "hooks installed", Detail: fmt.Sprintf("cx's %s hook(s) run another cx binary (cx moved?)", strings.Join(st.WrongPath, ", ")), Fix: "cx ctl install"})
	default:
		out = append(out, health.Check{Name: "hooks installed", OK: true, Detail: in.HooksPath()})
	}
	if in.Trust && err == nil && len(st.Installed) > 0 {
		var untrusted []string
		for _, ev := range st.Installed {
			if st.Trust[ev] != "trusted" {
				untrusted = append(untrusted, fmt.Sprintf("%s (%s)", ev, orNotListed(st.Trust[ev])))
			}
		}
		if len(untrusted) > 0 {
			out = append(out, health.Check{Name: "hooks trusted", Detail: "Codex will skip: " + strings.Join(untrusted, ", "), Fix: "cx ctl install"})
		} else {
			out = append(out, health.Check{Name: "hooks trusted", OK: true, Detail: fmt.Sprintf("%d hooks trusted in %s", len(st.Installed), in.ConfigPath())})
		}
	}
	if in.Codex == "" && err == nil && len(st.Installed) > 0 {
		// Only Codex knows whether it trusts a hook (0.145 and later ask),
		// and there is none to ask: not a pass, not a failure of the hooks.
		out = append(out, health.Check{Name: "hooks trusted", Detail: "unknown: no Codex to ask (Codex 0.145 and later run a hook only once trusted)",
			Fix: "install Codex, then `cx ctl install` again to record the hooks' trust"})
	}
	if err == nil && len(st.Missing) == 0 {
		out = append(out, in.fire(ctx, cwd))
	}
	return out
}

func orNotListed(s string) string {
	if s == "" {
		return "not listed"
	}
	return s
}

// fire runs the installed SessionStart hook command the way Codex would,
// with a cx-doctor- session id the handler answers but never records.
func (in *Installer) fire(ctx context.Context, cwd string) health.Check {
	payload, _ := json.Marshal(map[string]any{"session_id": health.DoctorPrefix + fmt.Sprint(time.Now().UnixNano()),
		"hook_event_name": "SessionStart", "source": "startup", "cwd": cwd, "transcript_path": ""})
	argv := codex.HookShell(os.Getenv, Command(in.CXPath, "SessionStart"))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// A host that runs answers the probe; none is started for it.
	cmd.Env = hookwire.SetEnv(os.Environ(), hookwire.HostEnv, "nostart")
	cmd.Stdin = strings.NewReader(string(payload))
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start)
	var v map[string]any
	if err != nil || json.Unmarshal(out, &v) != nil {
		return health.Check{Name: "hooks firing", Detail: fmt.Sprintf("the SessionStart hook answered %q (%v)", out, err), Fix: "cx ctl install"}
	}
	return health.Check{Name: "hooks firing", OK: true, Detail: fmt.Sprintf("SessionStart answered valid JSON in %v", took.Round(time.Millisecond))}
}
