package lifecycle

import (
	"time"

	"cx/internal/config"
	"cx/internal/sink"
	execsink "cx/internal/sink/exec"
	localsink "cx/internal/sink/local"
	ovsink "cx/internal/sink/openviking"
)

// JobAppend is the kind of a job that sends a live generation's new turns
// to a remote sink (on Stop), ahead of its commit.
const JobAppend = "append"

// host is what the sinks may use of the manager (its clock and environment
// read at each call, so a test's replacement holds).
func (m *Manager) host() sink.Host {
	return sink.Host{DB: m.DB, Cfg: m.Cfg, Log: m.Log,
		Getenv: func(k string) (string, bool) { return m.Getenv(k) },
		Now:    func() time.Time { return m.Now() }}
}

// defaultSinks are the sinks this build has.
func defaultSinks(h sink.Host) map[string]sink.Sink {
	return map[string]sink.Sink{"local": localsink.New(h), ovsink.Name: ovsink.New(h), "exec": execsink.New(h)}
}

// ConfiguredSinks are the sinks cx knows, built for cfg (doctor checks
// those cfg names).
func ConfiguredSinks(cfg config.Config, getenv func(string) (string, bool)) map[string]sink.Sink {
	return defaultSinks(sink.Host{Cfg: cfg, Getenv: getenv, Now: nowUTC})
}
