// Package sinks wires the sinks this build has, by name: the one place
// that knows all of them (the outbox and doctor get them from here).
package sinks

import (
	"cx/internal/config"
	"cx/internal/health"
	"cx/internal/recall/prompt"
	"cx/internal/sink"
	execsink "cx/internal/sink/exec"
	localsink "cx/internal/sink/local"
	ovsink "cx/internal/sink/openviking"
	"cx/internal/testpoint"
)

// Build returns every sink this build has, working through h.
func Build(h sink.Host) map[string]sink.Sink {
	local := h
	h.Index = nil // the local sink's alone: it keeps the index
	return map[string]sink.Sink{"local": localsink.New(local), ovsink.Name: ovsink.New(h), "exec": execsink.New(h)}
}

// RemoteRecall is per-prompt recall's remote source for cfg: the
// OpenViking sink's memory search when that sink is configured, else nil.
func RemoteRecall(cfg config.Config, getenv func(string) (string, bool)) prompt.Remote {
	return ovsink.RecallSource(cfg, getenv)
}

// PluginCheck reports a Codex plugin in codexHome that writes what a sink
// of cx's does (the OpenViking plugin); found is false when there is none.
func PluginCheck(cfg config.Config, codexHome string, getenv func(string) (string, bool)) (health.Check, bool) {
	return ovsink.PluginCheck(cfg, codexHome, getenv)
}

// Configured are the sinks cx knows, built for cfg without a ledger (doctor
// checks those cfg names).
func Configured(cfg config.Config, getenv func(string) (string, bool)) map[string]sink.Sink {
	return Build(sink.Host{Cfg: cfg, Getenv: getenv, Now: testpoint.Now})
}
