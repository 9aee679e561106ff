package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cx/internal/testing/ovfake"
)

// With the openviking sink on, doctor checks the server: healthy and a
// session route taking cx's identity, or each way it refuses — with the
// fix and where each setting came from.
func TestDoctorChecksOpenViking(t *testing.T) {
	t.Parallel()
	apiKey, err := ovfake.StartWith(ovfake.Options{APIKey: "right-key", RootKey: "root-key"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(apiKey.Close)
	trusted, err := ovfake.StartWith(ovfake.Options{Trusted: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(trusted.Close)
	dir := t.TempDir()
	fakeCodex(t, dir, "codex", false)
	cases := []struct {
		name, url, key, extra string
		env                   []string
		want                  []string
	}{
		{name: "right key", url: apiKey.URL, key: "right-key",
			want: []string{"ok   openviking       " + apiKey.URL + " healthy (server ovfake, auth api_key); a session route takes cx's identity; url from cx config [openviking], key from $OPENVIKING_API_KEY"}},
		{name: "wrong key", url: apiKey.URL, key: "wrong-key", want: []string{"FAIL openviking", "refused the key", "fix: set $OPENVIKING_API_KEY"}},
		{name: "root key", url: apiKey.URL, key: "root-key", want: []string{"FAIL openviking", "refused the key", "ROOT key cannot write user sessions"}},
		{name: "trusted without identity", url: trusted.URL, want: []string{"FAIL openviking", "auth trusted", "needs [openviking] account and user"}},
		{name: "trusted with identity", url: trusted.URL, extra: "account = \"acme\"\nuser = \"ana\"\npeer = \"ana-laptop\"\n",
			want: []string{"ok   openviking", "auth trusted", "peer_id \"ana-laptop\" from cx config [openviking]"}},
		{name: "account and user with an api_key server", url: apiKey.URL, key: "right-key", env: []string{"OPENVIKING_ACCOUNT=acme", "OPENVIKING_USER=ana"},
			want: []string{"ok   openviking", "account/user not sent (an api_key server takes the identity from the key)"}},
		{name: "url from the environment", env: []string{"OPENVIKING_URL=" + apiKey.URL}, key: "right-key",
			want: []string{"ok   openviking", "url from $OPENVIKING_URL"}},
		{name: "down", url: "http://127.0.0.1:1", key: "right-key", want: []string{"FAIL openviking", "does not answer", "outbox"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfgFile := filepath.Join(t.TempDir(), "config.toml")
			body := "sinks = [\"local\", \"openviking\"]\n[openviking]\n" + c.extra
			if c.url != "" {
				body += "url = \"" + c.url + "\"\n"
			}
			if err := os.WriteFile(cfgFile, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			env := append([]string{"PATH=" + dir + ":/usr/bin:/bin", "CX_CONFIG=" + cfgFile, "OPENVIKING_API_KEY=" + c.key, "HOME=" + t.TempDir()}, c.env...)
			out := runCX(t, env, "ctl", "doctor").stdout
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Fatalf("doctor lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// The OpenViking Codex plugin writes the same cx-<id> sessions: doctor and
// install say so, and what to choose.
func TestDoctorReportsOpenVikingPlugin(t *testing.T) {
	t.Parallel()
	ov, err := ovfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ov.Close)
	dir := t.TempDir()
	fakeCodex(t, dir, "codex", false)
	pluginHooks := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"node '/opt/ov/examples/codex-memory-plugin/scripts/auto-capture.mjs'","timeout":45}]}]}}`
	pluginConfig := "[plugins.\"openviking-memory@openviking\"]\nenabled = true\n"
	cases := []struct {
		name, hooks, codexConfig, sinks, extra string
		env                                    []string
		want                                   []string
	}{
		{name: "hooks, sink on", hooks: pluginHooks, sinks: `"local", "openviking"`,
			want: []string{"FAIL ov plugin", "its Stop hook in", "the sink is refused until you choose", "allow_with_plugin"}},
		{name: "plugin table, sink on", codexConfig: pluginConfig, sinks: `"local", "openviking"`,
			want: []string{"FAIL ov plugin", `plugin "openviking-memory@openviking" enabled`}},
		{name: "disabled plugin table", codexConfig: "[plugins.\"openviking-memory@openviking\"]\nenabled = false\n", sinks: `"local", "openviking"`,
			want: []string{"!ov plugin"}},
		{name: "capture off", hooks: pluginHooks, sinks: `"local", "openviking"`, env: []string{"OPENVIKING_AUTO_CAPTURE=false"},
			want: []string{"ok   ov plugin       ", "OPENVIKING_AUTO_CAPTURE off"}},
		{name: "allowed", hooks: pluginHooks, sinks: `"local", "openviking"`, extra: "allow_with_plugin = true\n",
			want: []string{"ok   ov plugin       ", "each turn twice"}},
		{name: "sink off", hooks: pluginHooks, sinks: `"local"`,
			want: []string{"ok   ov plugin       ", "cx's openviking sink is off"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			codexHome := t.TempDir()
			if c.hooks != "" {
				os.WriteFile(filepath.Join(codexHome, "hooks.json"), []byte(c.hooks), 0o600)
			}
			if c.codexConfig != "" {
				os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(c.codexConfig), 0o600)
			}
			cfgFile := filepath.Join(t.TempDir(), "config.toml")
			os.WriteFile(cfgFile, []byte("sinks = ["+c.sinks+"]\n[openviking]\nurl = \""+ov.URL+"\"\n"+c.extra), 0o600)
			env := append([]string{"PATH=" + dir + ":/usr/bin:/bin", "CX_CONFIG=" + cfgFile, "HOME=" + t.TempDir(), "CODEX_HOME=" + codexHome}, c.env...)
			out := runCX(t, env, "ctl", "doctor", "--codex-home", codexHome).stdout
			for _, w := range c.want {
				if neg, ok := strings.CutPrefix(w, "!"); ok {
					if strings.Contains(out, neg) {
						t.Fatalf("doctor reports %q:\n%s", neg, out)
					}
				} else if !strings.Contains(out, w) {
					t.Fatalf("doctor lacks %q:\n%s", w, out)
				}
			}
			if strings.HasPrefix(c.want[0], "FAIL") {
				r := runCX(t, env, "ctl", "install", "--codex-home", codexHome)
				if !strings.Contains(r.stderr, "note: the OpenViking Codex plugin is active") || !strings.Contains(r.stderr, "allow_with_plugin") {
					t.Fatalf("install does not say the plugin writes the same sessions:\n%s", r.stderr)
				}
			}
		})
	}
}
