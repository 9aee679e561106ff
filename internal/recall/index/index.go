// Package index is the write side of recall: what each archived turn puts
// in the full-text index (redacted again on the way in, inside the
// transaction that archives it), the backfill of archives stored before
// the index, and the index's upkeep after commits (its segments merged,
// per-prompt recall's stale windows read again). The local sink is its
// one writer; internal/recall/search and internal/recall/prompt read
// what it wrote.
package index

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cx/internal/checkpoint"
	"cx/internal/ledger"
	"cx/internal/recall"
	"cx/internal/redact"
	"cx/internal/rollout"
)

// maxField bounds each indexed field of a turn: the index finds a turn,
// `show --turn` shows it.
const maxField = 64 << 10

// Docs are the index rows of a generation's archived turns: numbered on
// from the turns of the generations before it, each field redacted.
func Docs(sessionID string, gen, before int, turns []rollout.Turn, cwd, project string, fallback time.Time) []ledger.RecallDoc {
	docs := make([]ledger.RecallDoc, 0, len(turns))
	for i, t := range turns {
		at, err := time.Parse(time.RFC3339Nano, t.Time)
		if err != nil {
			at = fallback
		}
		docs = append(docs, ledger.RecallDoc{
			SessionID: sessionID, Generation: gen, Turn: before + i + 1, Key: t.Key, At: at.UTC(), Cwd: cwd, Project: project,
			Prompt:   field(t.User),
			Reply:    field(strings.Join(t.Assistant, "\n")),
			Commands: field(commands(t.Tools)),
			Files:    field(files(t.Files)),
		})
	}
	return docs
}

func field(s string) string {
	if len(s) > maxField {
		s = strings.ToValidUTF8(s[:maxField], "")
	}
	return redact.String(s)
}

// commands is one line per tool call, as a person would say it
// (rollout.ToolLine: the command, a patch's files, a plan's steps), and
// how it ended.
func commands(tools []rollout.ToolCall) string {
	var b strings.Builder
	for _, c := range tools {
		line := rollout.OneLine(rollout.ToolLine(c), 400)
		if c.Command == "" {
			line = recall.ToolMark + line // what a tool did, not a command to run
		}
		b.WriteString(line)
		if c.ExitCode != nil {
			b.WriteString(" (exit " + strconv.Itoa(*c.ExitCode) + ")")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func files(edits []rollout.FileEdit) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, f := range edits {
		if seen[f.Path+"\x00"+f.MoveTo] {
			continue // a file a turn wrote twice is one file it wrote
		}
		seen[f.Path+"\x00"+f.MoveTo] = true
		b.WriteString(f.Path)
		if f.MoveTo != "" {
			b.WriteString(" → " + f.MoveTo)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// IndexGeneration puts a generation's archived turns in the index inside
// the transaction that archives them, under the project id the caller
// already knows; a turn with no time of its own gets at.
func IndexGeneration(ctx context.Context, tx *ledger.Tx, sessionID string, gen int, turns []rollout.Turn, cwd, project string, at time.Time) error {
	before, err := tx.TurnsBefore(ctx, sessionID, gen)
	if err != nil {
		return fmt.Errorf("index %s g%d: %w", sessionID, gen, err)
	}
	return tx.IndexGeneration(ctx, sessionID, gen, Docs(sessionID, gen, before, turns, cwd, project, at))
}

// backfillBatch is how many archives one backfill transaction indexes, so
// hooks waiting on the write lock wait for one batch, not the whole.
const backfillBatch = 200

// Backfill indexes, once, the archives stored before the recall index
// existed (the migration that made the index asked for it), after moving
// an index of words as typed (schema 8) to stemmed words. It returns
// how many generations it indexed; 0 when there was nothing to do.
func Backfill(ctx context.Context, db *ledger.DB, home string) (int, error) {
	if err := reindex(ctx, db); err != nil {
		return 0, err
	}
	pending, err := db.Meta(ctx, ledger.RecallBackfillKey)
	if err != nil || pending == "" {
		return 0, err
	}
	projects := recall.NewProjects(home)
	done := 0
	for {
		more := false
		err := db.Tx(ctx, func(tx *ledger.Tx) error {
			from, err := tx.Meta(ctx, ledger.RecallBackfillKey)
			if err != nil || from == "" {
				return err // another process finished it
			}
			sid, gens, resumed := strings.Cut(from, "\x00") // where the last batch stopped
			g, _ := strconv.Atoi(gens)
			if !resumed {
				sid, g = "", 0
			}
			archives, indexed, err := tx.ArchivesFrom(ctx, sid, g, backfillBatch)
			if err != nil {
				return err
			}
			for i, a := range archives {
				if indexed[i] {
					continue // archived since the index exists: indexed then
				}
				if err := indexArchive(ctx, tx, projects, a); err != nil {
					return err
				}
				done++
			}
			if len(archives) < backfillBatch {
				return tx.DeleteMeta(ctx, ledger.RecallBackfillKey)
			}
			last := archives[len(archives)-1]
			more = true
			return tx.PutMeta(ctx, ledger.RecallBackfillKey, last.SessionID+"\x00"+strconv.Itoa(last.Generation))
		})
		if err != nil {
			return done, fmt.Errorf("recall backfill: %w", err)
		}
		if !more {
			return done, nil
		}
	}
}

// reindexBatch is how many rows one reindex transaction moves.
const reindexBatch = 500

// reindex moves what a schema-8 index holds to the stemmed one, in
// batches, once.
func reindex(ctx context.Context, db *ledger.DB) error {
	for {
		pending, err := db.Meta(ctx, ledger.RecallReindexKey)
		if err != nil || pending == "" {
			return err
		}
		if err := db.Tx(ctx, func(tx *ledger.Tx) error {
			_, err := tx.ReindexRecall(ctx, reindexBatch)
			return err
		}); err != nil {
			return fmt.Errorf("recall reindex: %w", err)
		}
	}
}

func indexArchive(ctx context.Context, tx *ledger.Tx, projects *recall.Projects, a ledger.Archive) error {
	var turns []rollout.Turn
	if err := json.Unmarshal([]byte(a.Turns), &turns); err != nil {
		return nil // an unreadable archive has nothing to find
	}
	cwd := ""
	if s, err := tx.Session(ctx, a.SessionID); err == nil {
		cwd = s.Cwd
	}
	if cwd == "" && a.Checkpoint != "" {
		var cp checkpoint.Checkpoint
		if json.Unmarshal([]byte(a.Checkpoint), &cp) == nil {
			cwd = cp.Cwd
		}
	}
	return IndexGeneration(ctx, tx, a.SessionID, a.Generation, turns, cwd, projects.Of(cwd), a.StoredAt)
}
