// Command floorhook is the cheapest hook a Go program can be: it reads its
// input to the end and answers with a no-op. lifecycle's
// BenchmarkSessionsAtOnce runs it as a row of its own ("floor Go"), so a
// hook's CPU is read beside what any Go process Codex starts for a hook
// costs on the same machine, under the same load: the part of it that is
// cx's own is the difference. Built as cx-hook is (static, no cgo, the
// same runtime setting).
//
//go:debug updatemaxprocs=0
package main

import (
	"io"
	"os"
)

func main() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	_, _ = os.Stdout.WriteString("{}\n")
}
