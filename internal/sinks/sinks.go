// Package sinks wires the sinks this build has, by name: the one place
// that knows all of them (the outbox and doctor get them from here).
package sinks

import (
	"cx/internal/config"
	"cx/internal/sink"
	execsink "cx/internal/sink/exec"
	localsink "cx/internal/sink/local"
	ovsink "cx/internal/sink/openviking"
	"cx/internal/testpoint"
)

// Build returns every sink this build has, working through h.
func Build(h sink.Host) map[string]sink.Sink {
	return map[string]sink.Sink{"local": localsink.New(h), ovsink.Name: ovsink.New(h), "exec": execsink.New(h)}
}

// Configured are the sinks cx knows, built for cfg without a ledger (doctor
// checks those cfg names).
func Configured(cfg config.Config, getenv func(string) (string, bool)) map[string]sink.Sink {
	return Build(sink.Host{Cfg: cfg, Getenv: getenv, Now: testpoint.Now})
}
