package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cx/internal/testing/codextest"

	"github.com/creack/pty"
)

// readmeCtlCommands are the `cx ctl …` lines of the code blocks of the
// project's pages (README.md, ARCHITECTURE.md, docs/), without their
// comments.
func readmeCtlCommands(t *testing.T) []string {
	t.Helper()
	pages, _ := filepath.Glob("../../docs/*.md")
	var out []string
	for _, page := range append([]string{"../../README.md", "../../ARCHITECTURE.md"}, pages...) {
		out = append(out, ctlCommandsIn(t, page)...)
	}
	return out
}

func ctlCommandsIn(t *testing.T, page string) []string {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		if in && strings.HasPrefix(l, "cx ctl ") {
			if i := strings.Index(l, "  #"); i >= 0 {
				l = l[:i]
			}
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// Every `cx ctl` command the project's pages show runs as shown (placeholders
// filled in) on a ledger with a real session in it: none is refused as a
// usage or query error (exit 2). The commands that start Codex (`cx`,
// `cx exec`, `cx app-server`) are run by the end-to-end tests.
func TestREADMECommandsRun(t *testing.T) {
	cx := codextest.CX(t)
	cmds := readmeCtlCommands(t)
	if len(cmds) < 5 {
		t.Fatalf("found %d cx ctl commands in the README: %v", len(cmds), cmds)
	}
	root := t.TempDir()
	home := homeWithRollout(t, root)
	project := filepath.Join(root, "app")
	bin := filepath.Join(root, "bin")
	for _, d := range []string{project, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(cx, filepath.Join(bin, "cx")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+home, "CODEX_HOME="+filepath.Join(home, ".codex"), "CX_HOME="+filepath.Join(home, ".cx"),
		"PATH="+bin+":/usr/bin:/bin", "CX_CODEX_BIN=/bin/false")
	run := func(line string) (string, int) {
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir, cmd.Env = project, env
		done := make(chan struct{})
		var out []byte
		go func() { out, _ = cmd.CombinedOutput(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%s did not finish", line)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := run("cx ctl import"); code != 0 {
		t.Fatalf("cx ctl import: exit %d\n%s", code, out)
	}
	fill := strings.NewReplacer("<session>", scriptSession, "<query>", "notes", "~/src/app", project, `"…"`, `"how did we check the notes?"`)
	placeholder := regexp.MustCompile(`<[a-z]+>|…`)
	for _, c := range cmds {
		line := fill.Replace(c)
		if placeholder.MatchString(line) {
			t.Errorf("README command %q has a placeholder this test does not fill", c)
			continue
		}
		out, code := run(line)
		if code == 2 || strings.Contains(out, "syntax error") {
			t.Errorf("README command %q: exit %d\n%s", line, code, out)
		}
	}
}

// Answering "n" to forget's question is the user's choice, not a failure:
// exit 0, nothing forgotten.
func TestForgetAnsweredNo(t *testing.T) {
	cx := codextest.CX(t)
	home := homeWithRollout(t, t.TempDir())
	env := []string{"HOME=" + home, "CODEX_HOME=" + filepath.Join(home, ".codex"), "CX_HOME=" + filepath.Join(home, ".cx"), "PATH=/usr/bin:/bin", "TERM=xterm"}
	imp := exec.Command(cx, "ctl", "import")
	imp.Env = env
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	cmd := exec.Command(cx, "ctl", "forget", scriptSession)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var screen strings.Builder
	asked := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			screen.Write(buf[:n])
			if strings.Contains(screen.String(), "[y/N]") {
				select {
				case <-asked:
				default:
					close(asked)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("forget did not ask")
	}
	if _, err := master.Write([]byte("n\r")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("forget answered n: %v (want exit 0)", err)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("forget did not finish")
	}
	show := exec.Command(cx, "ctl", "show", scriptSession)
	show.Env = env
	if out, err := show.CombinedOutput(); err != nil || strings.Contains(string(out), "forgotten") {
		t.Fatalf("after n the session is gone or forgotten: %v\n%s", err, out)
	}
}

// homeWithRollout is a HOME under root whose Codex home holds the scripts'
// real rollout.
func homeWithRollout(t *testing.T, root string) string {
	t.Helper()
	home := filepath.Join(root, "home")
	sessions := filepath.Join(home, ".codex", "sessions", "2026", "11", "22")
	if err := os.MkdirAll(sessions, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(scriptRollout)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sessions, "rollout-2026-11-22T01-32-37-"+scriptSession+".jsonl"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// On a terminal, `cx ctl import`'s progress line is cleared before its
// summary is printed (issue 52: the summary was printed onto
// "importing 1/1 sessions…").
func TestImportClearsItsProgressLine(t *testing.T) {
	cx := codextest.CX(t)
	home := homeWithRollout(t, t.TempDir())
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	cmd := exec.Command(cx, "ctl", "import")
	cmd.Env = []string{"HOME=" + home, "CODEX_HOME=" + filepath.Join(home, ".codex"), "CX_HOME=" + filepath.Join(home, ".cx"), "PATH=/usr/bin:/bin", "TERM=xterm"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() { _, _ = io.Copy(&screen, master); close(read) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("import: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("import did not finish")
	}
	select {
	case <-read:
	case <-time.After(5 * time.Second):
	}
	out := screen.String()
	progress, clear, summary := strings.LastIndex(out, "importing 1/1 sessions…"), strings.LastIndex(out, "\r\x1b[K"), strings.Index(out, "1 imported")
	if progress < 0 || summary < 0 || !(progress < clear && clear < summary) {
		t.Fatalf("the summary is not printed on a cleared line (progress at %d, clear at %d, summary at %d):\n%q", progress, clear, summary, out)
	}
}

// Every table of the README and the docs renders: each row belongs to a
// table that starts with a header and its separator, and has the header's
// number of cells (issue 52: two rows after a paragraph rendered as text).
func TestTablesRender(t *testing.T) {
	pages, _ := filepath.Glob("../../docs/*.md")
	cells := func(l string) int {
		return len(regexp.MustCompile(`(^|[^\\])\|`).FindAllString(strings.TrimSpace(l), -1)) - 1
	}
	for _, page := range append([]string{"../../README.md", "../../ARCHITECTURE.md"}, pages...) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		fence := false
		for i := 0; i < len(lines); i++ {
			if strings.HasPrefix(lines[i], "```") {
				fence = !fence
			}
			if fence || !strings.HasPrefix(lines[i], "|") {
				continue
			}
			if i+1 >= len(lines) || !regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+\s*$`).MatchString(lines[i+1]) {
				t.Errorf("%s:%d: a table row outside a table (no header and separator): %s", page, i+1, lines[i])
				continue
			}
			n := cells(lines[i])
			j := i + 2
			for ; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
				if c := cells(lines[j]); c != n {
					t.Errorf("%s:%d: %d cells, the header has %d: %s", page, j+1, c, n, lines[j])
				}
			}
			i = j - 1
		}
	}
}
