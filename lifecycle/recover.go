package lifecycle

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"cx/internal/codex"
	"cx/internal/ledger"
)

// ReasonRecovered ends a session that cx learned of only afterwards, from
// its rollout: the run that had it could not write the ledger (a full disk,
// an I/O error, a damaged or locked ledger).
const ReasonRecovered = "recovered"

// unrecordedDir holds the breadcrumbs of runs that could not write the
// ledger: empty files (an inode, no data, so they land on a full disk too)
// named <start unix nanos>-<base64url of the Codex home>.
const unrecordedDir = "unrecorded"

// markUnrecorded leaves the breadcrumb that a run which started at started
// on codexHome could not record its sessions; the next start or sweep that
// can write the ledger recovers them from the rollouts.
func markUnrecorded(home, codexHome string, started time.Time) error {
	dir := filepath.Join(home, unrecordedDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	name := strconv.FormatInt(started.UnixNano(), 10) + "-" + base64.RawURLEncoding.EncodeToString([]byte(codexHome))
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// Breadcrumb is one run that could not write the ledger.
type Breadcrumb struct {
	path      string
	Started   time.Time
	CodexHome string
}

// Unrecorded lists the breadcrumbs of runs that could not write the ledger.
func Unrecorded(home string) []Breadcrumb {
	entries, _ := os.ReadDir(filepath.Join(home, unrecordedDir))
	var out []Breadcrumb
	for _, e := range entries {
		ns, enc, ok := strings.Cut(e.Name(), "-")
		n, err := strconv.ParseInt(ns, 10, 64)
		ch, err2 := base64.RawURLEncoding.DecodeString(enc)
		if !ok || err != nil || err2 != nil {
			continue
		}
		out = append(out, Breadcrumb{filepath.Join(home, unrecordedDir, e.Name()), time.Unix(0, n), string(ch)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// recoverUnrecorded records and commits, once each, the sessions Codex
// wrote in codexHome while the ledger could not be written: rollouts
// touched since the last such scan (or since the earliest breadcrumb of an
// unrecorded run) that the ledger does not know. A rollout that may still
// be written to — its thread lock held, or touched within active_window —
// waits for a later scan. The first scan of a Codex home with no breadcrumb
// only notes where it stands: sessions from before cx are `cx ctl import`'s
// business, not this.
func (m *Manager) recoverUnrecorded(ctx context.Context, codexHome string) (int, error) {
	if codexHome == "" {
		return 0, nil
	}
	codexHome, _ = filepath.Abs(codexHome)
	key := "rollout_scan:" + codexHome
	mark, err := m.DB.Meta(ctx, key)
	if err != nil {
		return 0, err
	}
	var crumbs []Breadcrumb
	for _, b := range Unrecorded(m.Cfg.Home) {
		if b.CodexHome == codexHome {
			crumbs = append(crumbs, b)
		}
	}
	now := m.Now()
	var since time.Time
	if mark != "" {
		since, _ = time.Parse(time.RFC3339Nano, mark)
	}
	if len(crumbs) > 0 && (since.IsZero() || crumbs[0].Started.Before(since)) {
		since = crumbs[0].Started
	}
	if since.IsZero() {
		return 0, m.DB.Tx(ctx, func(tx *ledger.Tx) error { return tx.PutMeta(ctx, key, now.Format(time.RFC3339Nano)) })
	}
	since = since.Add(-time.Minute) // clock granularity, a write in flight at the last scan
	recovered := 0
	hold := time.Time{}
	rollouts := codex.RolloutsSince(codexHome, since)
	ids := make([]string, 0, len(rollouts))
	for id := range rollouts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		path := rollouts[id]
		if _, err := m.DB.Session(ctx, id); err == nil {
			continue
		} else if !errors.Is(err, ledger.ErrNotFound) {
			return recovered, err
		}
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		if codex.ThreadLocked(codexHome, id) || now.Sub(fi.ModTime()) < m.Cfg.Lifecycle.ActiveWindow.Duration {
			if hold.IsZero() || fi.ModTime().Before(hold) {
				hold = fi.ModTime()
			}
			continue // still being written: a later scan
		}
		err = m.DB.Tx(ctx, func(tx *ledger.Tx) error {
			s, created, err := m.ensureSession(ctx, tx, ledger.Session{ID: id, TranscriptPath: path, CodexHome: codexHome, EndReason: ReasonRecovered})
			if err == nil && created {
				err = tx.AddEvent(ctx, "session.recovered", s.ID, "", "recorded late from its rollout: the ledger could not be written when it ran")
			}
			return err
		})
		if err != nil {
			return recovered, err
		}
		if _, err := m.End(ctx, id, ReasonRecovered, EndOptions{}); err != nil {
			return recovered, err
		}
		recovered++
	}
	next := now
	if !hold.IsZero() {
		next = hold
	}
	err = m.DB.Tx(ctx, func(tx *ledger.Tx) error {
		if recovered > 0 {
			_ = tx.AddEvent(ctx, "rollouts.recovered", "", "", fmt.Sprintf("%d session(s) in %s", recovered, codexHome))
		}
		return tx.PutMeta(ctx, key, next.Format(time.RFC3339Nano))
	})
	if err != nil {
		return recovered, err
	}
	for _, b := range crumbs {
		if hold.IsZero() || b.Started.Before(hold) {
			_ = os.Remove(b.path)
		}
	}
	return recovered, nil
}
