// Package buildinfo is cx's version, read from its build: one place for
// both binaries a release installs (cx, and cx-hook, which answers the MCP
// handshake in cx's name).
package buildinfo

import "runtime/debug"

// Version is cx's version: linked (set at link time), else the module version
// `go install module@version` records, else — a build from a checkout —
// "devel" with the VCS revision and dirty flag Go records in the build info.
func Version(linked string) string {
	if linked != "" {
		return linked
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel-" + rev
	if modified == "true" {
		v += "-dirty"
	}
	return v
}
