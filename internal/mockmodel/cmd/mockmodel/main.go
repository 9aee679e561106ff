// Command mockmodel runs the mock Responses API on 127.0.0.1 until killed,
// printing its base URL; with -log it appends each request body to a file.
// Used by the demo and for recording rollouts by hand.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"cx/internal/mockmodel"
)

func main() {
	model := flag.String("model", "gpt-5.5", "model id to serve")
	logPath := flag.String("log", "", "append every request body to this file")
	flag.Parse()
	var script mockmodel.Script
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mockmodel:", err)
			os.Exit(1)
		}
		defer f.Close()
		script = func(r mockmodel.Request) mockmodel.Reply {
			fmt.Fprintf(f, "%s\n", r.Body)
			return mockmodel.Directives(r)
		}
	}
	s, err := mockmodel.Start(*model, script)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mockmodel:", err)
		os.Exit(1)
	}
	fmt.Println(s.URL)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	<-ch
	_ = s.Close()
}
