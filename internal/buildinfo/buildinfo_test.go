package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	cases := []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "devel-0123456789ab-dirty"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}}, "devel-0123456789ab"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	}
	for _, c := range cases {
		if got := versionOf(&c.bi); got != c.want {
			t.Errorf("versionOf(%+v) = %q, want %q", c.bi, got, c.want)
		}
	}
	if Version("v9") != "v9" {
		t.Error("a linked version is not the version")
	}
}
