// Package codex owns what cx knows about the Codex CLI — everything that
// changes when Codex changes: the hook payload and its events (ParseHook);
// what a frame between a daemon and `codex app-server` means for the
// threads it serves (AppServerFrames); finding the binary (CX_CODEX_BIN, config,
// PATH, the npm launcher and both package layouts) and what it supports
// (version gates from `codex --version` and `--help`, cached by binary
// identity); its home (CODEX_HOME) and the environment every Codex process
// cx starts runs with; its on-disk layout (sessions, archived_sessions,
// thread-writer-locks, the logs database) and process-based session
// discovery; its app-server JSON-RPC client; the hooks trust-key format and
// trust reads/writes; how configuration reaches it (`-c key=value`,
// developer_instructions).
//
// It may import only the standard library, leaf helpers (internal/config
// for the user's home, internal/fsutil, internal/proc for a lock's holder,
// internal/rollout for what a rollout says of its thread), toml, fsnotify
// and the sqlite driver; nothing in cx's own state machine.
package codex
