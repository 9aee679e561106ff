#!/usr/bin/env bash
# A demo anyone can run without an OpenAI account: the real Codex CLI (pinned,
# from npm) through cx, against cx's own mock model on 127.0.0.1.
#   1. a first session runs a command that fails, edits a file, runs one that
#      works, and is then killed (SIGKILL to Codex) — cx still commits it;
#   2. a second session starts: the context cx gives it is shown, carrying
#      the first one's goal, files and failed/working commands.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "The model in this demo is a LOCAL MOCK (cx's test server on 127.0.0.1): no OpenAI account, no network."
root="${XDG_CACHE_HOME:-$HOME/.cache}/cx-demo/run-$$"   # Codex refuses helper files under /tmp
mkdir -p "$root/bin" "$root/codex-home" "$root/project"
mock_pid=""
cleanup() { [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$root"; }
trap cleanup EXIT

say "Building cx and the mock model; installing Codex 0.171.0 from npm (cached)"
go build -o "$root/bin/cx" ./cmd/cx
go build -o "$root/bin/mockmodel" ./internal/testing/mockmodel/cmd/mockmodel
bash scripts/install-codex.sh >/dev/null
launcher=$(awk '$1=="0.171.0"{print $3}' "${XDG_CACHE_HOME:-$HOME/.cache}/cx-test/codex/manifest")

"$root/bin/mockmodel" -log "$root/requests.jsonl" -slow "continue=60s" > "$root/mock-url" &
mock_pid=$!
for _ in $(seq 50); do [ -s "$root/mock-url" ] && break; sleep 0.1; done
url=$(cat "$root/mock-url")

cat > "$root/codex-home/config.toml" <<TOML
model = "gpt-5.5"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.mock]
name = "local mock (cx demo)"
base_url = "$url"
wire_api = "responses"
env_key = "CX_DEMO_KEY"
request_max_retries = 0
stream_max_retries = 0

[projects."$root/project"]
trust_level = "trusted"

[analytics]
enabled = false

[tools.update_plan]
enabled = true

[notice.model_migrations]
"gpt-5.5" = "gpt-6-sol"
TOML
export CODEX_HOME="$root/codex-home" CX_HOME="$root/cx-home" CX_CODEX_BIN="$launcher" CX_DEMO_KEY=mock
cd "$root/project"
git init -q -b main . && printf '# widget\n' > README.md && git add . && git -c user.name=demo -c user.email=demo@example.invalid commit -qm init
cx="$root/bin/cx"

say "cx ctl install  (cx's hooks into this fresh CODEX_HOME, trusted through Codex's app-server)"
"$cx" ctl install

say "Session 1: a failing check, a file written, a passing check"
prompt='Set up the widget changelog and make the checks pass.
[[plan: add CHANGELOG.md | run the checks | write the release notes]]
[[shell: test -f CHANGELOG.md]]
[[patch]]*** Begin Patch
*** Add File: CHANGELOG.md
+# Changelog
+
+## 0.1.0
+- first widget release
*** End Patch[[/patch]]
[[shell: grep -q "0.1.0" CHANGELOG.md && echo checks pass]]'
"$cx" exec "$prompt" 2>&1 | sed -n '/^exec$/,$p' | head -20

say "Session 1 goes on (codex exec resume --last), and Codex is killed mid-turn (SIGKILL)"
"$cx" exec resume --last "continue" > "$root/session1b.out" 2>&1 &
cx_pid=$!
for _ in $(seq 300); do grep -q "continue" "$root/session1b.out" 2>/dev/null && break; sleep 0.1; done
sleep 1
codex_pid=$(cat /proc/$cx_pid/task/*/children | awk '{print $1}')
echo "   killing Codex (pid $codex_pid) with SIGKILL"
kill -KILL "$codex_pid"
wait "$cx_pid" || echo "   cx exited with $? — Codex's own status (killed by signal 9) — and committed the session anyway:"
"$cx" ctl sessions

say "Session 2 starts in the same project: the context cx gives it"
"$cx" ctl context
"$cx" exec "what is left to do?" > "$root/session2.out" 2>&1 || true

say "And it reached the model: the cx-context block in session 2's request (from the mock's log)"
python3 - "$root/requests.jsonl" <<'PY' || grep -o '<cx-context[^<]*' "$root/requests.jsonl" | tail -1
import json, sys
last = None
for line in open(sys.argv[1]):
    r = json.loads(line)
    for it in r.get("input", []):
        for c in it.get("content", []) if isinstance(it.get("content"), list) else []:
            t = c.get("text", "")
            if "<cx-context" in t and "what is left to do?" in json.dumps(r):
                last = t
print(last[last.index("<cx-context"):] if last else "(not found)")
PY
say "Done. Everything lived in $root and is removed now."
