package ledger

// migrations, in order; user_version is the number applied.
var migrations = []string{
	`CREATE TABLE runs (
		id TEXT PRIMARY KEY,
		pid INTEGER NOT NULL,
		pid_start INTEGER NOT NULL,
		codex_pid INTEGER NOT NULL DEFAULT 0,
		codex_start INTEGER NOT NULL DEFAULT 0,
		codex_home TEXT NOT NULL DEFAULT '',
		codex_version TEXT NOT NULL DEFAULT '',
		cwd TEXT NOT NULL DEFAULT '',
		mode TEXT NOT NULL DEFAULT '',
		args TEXT NOT NULL DEFAULT '[]',
		sinks TEXT NOT NULL DEFAULT '[]',
		foreground TEXT NOT NULL DEFAULT '',
		started_at TEXT NOT NULL,
		ended_at TEXT,
		exit_code INTEGER,
		end_reason TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX runs_open ON runs(ended_at) WHERE ended_at IS NULL;
	CREATE TABLE sessions (
		id TEXT PRIMARY KEY,
		run_id TEXT NOT NULL DEFAULT '',
		status TEXT NOT NULL,
		generation INTEGER NOT NULL DEFAULT 1,
		end_reason TEXT NOT NULL DEFAULT '',
		transcript_path TEXT NOT NULL DEFAULT '',
		cwd TEXT NOT NULL DEFAULT '',
		sinks TEXT NOT NULL DEFAULT '[]',
		codex_home TEXT NOT NULL DEFAULT '',
		meta TEXT NOT NULL DEFAULT '',
		cursor_offset INTEGER NOT NULL DEFAULT 0,
		cursor_seen INTEGER NOT NULL DEFAULT 0,
		cursor_inode INTEGER NOT NULL DEFAULT 0,
		cursor_size INTEGER NOT NULL DEFAULT 0,
		cursor_head TEXT NOT NULL DEFAULT '',
		gen_start INTEGER NOT NULL DEFAULT 0,
		turns INTEGER NOT NULL DEFAULT 0,
		interrupted INTEGER NOT NULL DEFAULT 0,
		compactions INTEGER NOT NULL DEFAULT 0,
		injected_compactions INTEGER NOT NULL DEFAULT 0,
		placeholders INTEGER NOT NULL DEFAULT 0,
		created_at TEXT NOT NULL,
		last_seen TEXT NOT NULL,
		ended_at TEXT
	);
	CREATE INDEX sessions_run ON sessions(run_id, status);
	CREATE TABLE generations (
		session_id TEXT NOT NULL,
		generation INTEGER NOT NULL,
		status TEXT NOT NULL,
		end_reason TEXT NOT NULL,
		run_id TEXT NOT NULL DEFAULT '',
		sinks TEXT NOT NULL DEFAULT '[]',
		start_offset INTEGER NOT NULL,
		end_offset INTEGER NOT NULL,
		turns INTEGER NOT NULL,
		exit_status INTEGER,
		ended_at TEXT NOT NULL,
		committed_at TEXT,
		PRIMARY KEY (session_id, generation)
	);
	CREATE TABLE jobs (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		kind TEXT NOT NULL,
		session_id TEXT NOT NULL,
		generation INTEGER NOT NULL,
		sink TEXT NOT NULL,
		state TEXT NOT NULL,
		attempts INTEGER NOT NULL DEFAULT 0,
		next_attempt_at TEXT NOT NULL,
		lease_owner TEXT NOT NULL DEFAULT '',
		lease_until TEXT,
		last_error TEXT NOT NULL DEFAULT '',
		created_at TEXT NOT NULL,
		updated_at TEXT NOT NULL,
		UNIQUE (kind, session_id, generation, sink)
	);
	CREATE INDEX jobs_due ON jobs(state, next_attempt_at);
	CREATE TABLE events (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		at TEXT NOT NULL,
		kind TEXT NOT NULL,
		session_id TEXT NOT NULL DEFAULT '',
		run_id TEXT NOT NULL DEFAULT '',
		detail TEXT NOT NULL DEFAULT ''
	);
	CREATE TABLE turns (
		session_id TEXT NOT NULL,
		key TEXT NOT NULL,
		generation INTEGER NOT NULL,
		offset INTEGER NOT NULL,
		data TEXT NOT NULL,
		captured_at TEXT NOT NULL,
		PRIMARY KEY (session_id, key)
	);
	CREATE INDEX turns_gen ON turns(session_id, generation, offset);
	CREATE TABLE archives (
		session_id TEXT NOT NULL,
		generation INTEGER NOT NULL,
		turns TEXT NOT NULL DEFAULT '[]',
		checkpoint TEXT NOT NULL DEFAULT '',
		continuity TEXT NOT NULL DEFAULT '',
		stored_at TEXT NOT NULL,
		PRIMARY KEY (session_id, generation)
	);
	-- The event log is append-only.
	CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
	CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;`,
	// 2: what each remote sink has been sent, so a crash never sends twice.
	`CREATE TABLE sink_turns (
		session_id TEXT NOT NULL,
		sink TEXT NOT NULL,
		turn_key TEXT NOT NULL,
		state TEXT NOT NULL,
		messages INTEGER NOT NULL,
		updated_at TEXT NOT NULL,
		PRIMARY KEY (session_id, sink, turn_key)
	);
	CREATE TABLE sink_commits (
		session_id TEXT NOT NULL,
		sink TEXT NOT NULL,
		generation INTEGER NOT NULL,
		state TEXT NOT NULL,
		remote_before INTEGER NOT NULL DEFAULT 0,
		detail TEXT NOT NULL DEFAULT '',
		updated_at TEXT NOT NULL,
		PRIMARY KEY (session_id, sink, generation)
	);`,
	// 3: small facts of cx's own, e.g. how far a scan for rollouts the
	// ledger missed has looked.
	`CREATE TABLE meta (
		key TEXT PRIMARY KEY,
		value TEXT NOT NULL
	);`,
	// 4: a remote sink's own counters, so "did my request arrive?" is
	// answered from the server's counters against what cx expected before
	// it sent (a commit resets OpenViking's live message count).
	`CREATE TABLE sink_sessions (
		session_id TEXT NOT NULL,
		sink TEXT NOT NULL,
		counter TEXT NOT NULL,
		expected INTEGER NOT NULL,
		commits INTEGER NOT NULL,
		auto_commit TEXT NOT NULL DEFAULT '',
		updated_at TEXT NOT NULL,
		PRIMARY KEY (session_id, sink)
	);
	ALTER TABLE sink_turns ADD COLUMN remote_before INTEGER NOT NULL DEFAULT -1;
	ALTER TABLE sink_turns ADD COLUMN sent_at TEXT NOT NULL DEFAULT '';
	ALTER TABLE sink_commits ADD COLUMN live_before INTEGER NOT NULL DEFAULT -1;
	ALTER TABLE sink_commits ADD COLUMN total_before INTEGER NOT NULL DEFAULT -1;
	ALTER TABLE sink_commits ADD COLUMN sent_at TEXT NOT NULL DEFAULT '';
	ALTER TABLE sink_commits ADD COLUMN archive_uri TEXT NOT NULL DEFAULT '';`,
	// 5: the checkpoint as a fold kept with the capture, so no hook reads a
	// rollout beyond the cursor: the fold of the turns before upto, the cx
	// context sections already in the rollout, and each generation's
	// checkpoint at its end.
	`CREATE TABLE session_folds (
		session_id TEXT PRIMARY KEY,
		upto INTEGER NOT NULL,
		fold TEXT NOT NULL,
		sections TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX turns_offset ON turns(session_id, offset);
	ALTER TABLE generations ADD COLUMN checkpoint TEXT NOT NULL DEFAULT '';`,
	// 6: "the latest sessions" without reading them all (start-time context).
	`CREATE INDEX sessions_last_seen ON sessions(last_seen DESC, id);`,
	// 7: what a job that goes to no sink is about (an end job's reason).
	`ALTER TABLE jobs ADD COLUMN detail TEXT NOT NULL DEFAULT '';`,
	// 8: the recall index: one row per archived turn, its text in FTS5
	// (rowid = recall_turns.id). The archives stored before it are indexed
	// once by the backfill this flag asks for (index.Backfill), in the
	// transaction that clears it.
	`CREATE TABLE recall_turns (
		id INTEGER PRIMARY KEY,
		session_id TEXT NOT NULL,
		generation INTEGER NOT NULL,
		turn INTEGER NOT NULL,
		key TEXT NOT NULL,
		at TEXT NOT NULL,
		cwd TEXT NOT NULL DEFAULT '',
		project TEXT NOT NULL DEFAULT '',
		UNIQUE (session_id, generation, key)
	);
	CREATE INDEX recall_turns_session ON recall_turns(session_id, turn);
	CREATE INDEX recall_turns_project ON recall_turns(project, at);
	CREATE VIRTUAL TABLE recall_text USING fts5(prompt, reply, commands, files, tokenize = 'unicode61 remove_diacritics 2');
	INSERT INTO meta (key, value) SELECT '` + RecallBackfillKey + `', 'pending' WHERE EXISTS (SELECT 1 FROM archives)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value;`,
	// 9: forgetting removes the bytes, not only the rows. Deleted content
	// is zeroed (secure_delete, on every connection of Open) and FTS5
	// removes a deleted row's terms from its index rather than adding a
	// delete marker beside them. What a ledger freed before this was kept
	// in free pages and free space within pages: the first forget vacuums
	// it away (ScrubKey).
	`INSERT INTO recall_text(recall_text, rank) VALUES('secure-delete', 1);
	INSERT INTO meta (key, value) SELECT '` + ScrubKey + `', 'pending' WHERE EXISTS (SELECT 1 FROM sessions)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value;`,
	// 10: recall that takes a question. The index's words are stemmed
	// (porter: "failing" finds "failed"); recall_text's rows move there in
	// batches (index.Backfill, RecallReindexKey), searched in both until
	// they have. Both keep their texts (FTS5's content table, which
	// textOf reads by id). recall_given: the turns per-prompt recall gave
	// a thread, so none is given twice.
	`CREATE VIRTUAL TABLE recall_words USING fts5(prompt, reply, commands, files, tokenize = 'porter unicode61 remove_diacritics 2');
	INSERT INTO recall_words(recall_words, rank) VALUES('secure-delete', 1);
	INSERT INTO meta (key, value) SELECT '` + RecallReindexKey + `', 'pending' WHERE EXISTS (SELECT 1 FROM recall_text)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value;
	CREATE TABLE recall_given (
		session_id TEXT NOT NULL,
		source_session TEXT NOT NULL,
		turn INTEGER NOT NULL,
		given_at TEXT NOT NULL,
		PRIMARY KEY (session_id, source_session, turn)
	);
	CREATE INDEX recall_given_source ON recall_given(source_session);`,
	// 11: forget reaches the event log: the one change it allows is an
	// event's detail blanked, everything else of it kept.
	`DROP TRIGGER events_no_update;
	CREATE TRIGGER events_no_update BEFORE UPDATE ON events
		WHEN NOT (NEW.detail = '' AND NEW.id = OLD.id AND NEW.at = OLD.at AND NEW.kind = OLD.kind AND NEW.session_id = OLD.session_id AND NEW.run_id = OLD.run_id)
		BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;`,
	// 12: a project's latest turns, found without a sort (per-prompt
	// recall's window).
	`CREATE INDEX recall_turns_project_id ON recall_turns(project, id);`,
	// 13: a session's events by kind (was it forgotten?) without a scan.
	`CREATE INDEX events_session ON events(session_id, kind);`,
	// 14: a turn's indexed length in characters, written with it, so
	// per-prompt recall ranks its candidates without reading their text.
	// Rows indexed before have none (NULL): it is read from the text when
	// asked (recallCharsCol); filling it here would read the whole index
	// inside a hook's migration.
	`ALTER TABLE recall_turns ADD COLUMN chars INTEGER;`,
}
