package ovclient

import (
	"os"
	"path/filepath"
	"testing"
)

// Settings as the OpenViking tools read theirs — the environment over
// ovcli.conf, the *_id aliases — with cx's own [openviking] keys over both.
func TestResolvePrecedence(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".openviking"), 0o700)
	os.WriteFile(filepath.Join(home, ".openviking", "ovcli.conf"),
		[]byte(`{"url":"http://conf:1","api_key":"conf-key","account_id":"conf-acct","user_id":"conf-user","actor_peer_id":"conf-peer"}`), 0o600)
	alt := filepath.Join(t.TempDir(), "other.conf")
	os.WriteFile(alt, []byte(`{"url":"http://alt:1","peer_id":"alt-peer","actor_peer_id":"ignored"}`), 0o600)
	cases := []struct {
		name string
		cx   Settings
		env  map[string]string
		want Settings
		from map[string]string
	}{
		{name: "ovcli.conf and its aliases", want: Settings{URL: "http://conf:1", APIKey: "conf-key", Account: "conf-acct", User: "conf-user", Peer: "conf-peer"},
			from: map[string]string{"url": "ovcli.conf"}},
		{name: "environment over ovcli.conf",
			env:  map[string]string{"OPENVIKING_URL": "http://env:1/", "OPENVIKING_API_KEY": "env-key", "OPENVIKING_ACCOUNT": "env-acct", "OPENVIKING_USER": "env-user", "OPENVIKING_PEER_ID": "env-peer"},
			want: Settings{URL: "http://env:1", APIKey: "env-key", Account: "env-acct", User: "env-user", Peer: "env-peer"},
			from: map[string]string{"url": "$OPENVIKING_URL", "peer": "$OPENVIKING_PEER_ID"}},
		{name: "base url and bearer token", env: map[string]string{"OPENVIKING_BASE_URL": "http://base:1", "OPENVIKING_BEARER_TOKEN": "tok"},
			want: Settings{URL: "http://base:1", APIKey: "tok", Account: "conf-acct", User: "conf-user", Peer: "conf-peer"}},
		{name: "cx's keys over both", cx: Settings{URL: "http://cx:1", Account: "cx-acct", User: "cx-user", Peer: "cx-peer"},
			env:  map[string]string{"OPENVIKING_URL": "http://env:1", "CX_KEY": "cx-key", "OPENVIKING_API_KEY": "env-key"},
			want: Settings{URL: "http://cx:1", APIKey: "cx-key", Account: "cx-acct", User: "cx-user", Peer: "cx-peer"},
			from: map[string]string{"url": "cx config [openviking]", "api_key": "$CX_KEY"}},
		{name: "another ovcli.conf, peer_id before actor_peer_id", env: map[string]string{"OPENVIKING_CLI_CONFIG_FILE": alt},
			want: Settings{URL: "http://alt:1", Peer: "alt-peer"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			getenv := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
			got, src := Resolve(c.cx, "CX_KEY", getenv, home)
			got.Timeout = 0
			if got != c.want {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
			for k, v := range c.from {
				if len(src[k]) < len(v) || src[k][:len(v)] != v {
					t.Fatalf("%s from %q, want %q", k, src[k], v)
				}
			}
		})
	}
	if s, _ := Resolve(Settings{}, "", func(string) (string, bool) { return "", false }, t.TempDir()); s.URL != defaultURL || s.Timeout != defaultTimeout {
		t.Fatalf("defaults: %+v", s)
	}
}
