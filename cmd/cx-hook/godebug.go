// The runtime's monitor re-reads the cgroup's CPU limit at its first look
// and every second after, to move GOMAXPROCS: nothing cx runs needs it
// moved while it runs, and a hook's or the MCP front's process paid ~1% of
// its CPU for the read (perf, 200 hooks against a stub host). The limit
// is still read once at start.
//go:debug updatemaxprocs=0

package main
