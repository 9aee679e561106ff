// Package recall is what cx's recall shares between its write side
// (internal/recall/index: the full-text index in the ledger) and its read
// sides (internal/recall/search: a search, a turn, a session;
// internal/recall/prompt: per-prompt recall): a project's identity
// (Projects), its window — the project's latest turns with their terms
// and item text, kept as a file under CX_HOME/recall, read without the
// index, and which of its words are ordinary — and a question read as
// terms and dates.
package recall

import (
	"cx/internal/continuity"
)

// Projects gives the project id of a directory, the identity continuity
// uses; one per process (finding a root commit runs git once per root).
type Projects struct {
	store continuity.Store
	seen  map[string]continuity.Identity
}

// NewProjects returns the project identities kept under cx's home.
func NewProjects(home string) *Projects {
	return &Projects{store: continuity.Store{Home: home}, seen: map[string]continuity.Identity{}}
}

// Of returns dir's project id ("" for no dir).
func (p *Projects) Of(dir string) string { return p.identity(dir).ProjectID }

func (p *Projects) identity(dir string) continuity.Identity {
	if dir == "" {
		return continuity.Identity{}
	}
	if id, ok := p.seen[dir]; ok {
		return id
	}
	id := p.store.Identify(dir)
	p.seen[dir] = id
	return id
}

// said is what dir's continuity documents say — what a thread started
// there was given at its start.
func (p *Projects) Said(dir string) continuity.Said {
	var s continuity.Said
	if dir == "" {
		return s
	}
	project, worktree := p.store.Read(p.identity(dir))
	s.WhatItSays(continuity.ForContext(worktree))
	s.WhatItSays(continuity.ForContext(project))
	return s
}

// Home is the CX_HOME the projects' files are under.
func (p *Projects) Home() string { return p.store.Home }
