// Command mockmodel runs the mock Responses API on 127.0.0.1 until killed,
// printing its base URL; with -log it appends each request body to a file.
// Used by the demo and for recording rollouts by hand.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"cx/internal/testing/mockmodel"
)

func main() {
	model := flag.String("model", "gpt-5.5", "model id to serve")
	logPath := flag.String("log", "", "append every request body to this file")
	slow := flag.String("slow", "", "PROMPT=DURATION: answer this exact prompt only after DURATION")
	flag.Parse()
	var log *os.File
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mockmodel:", err)
			os.Exit(1)
		}
		defer f.Close()
		log = f
	}
	slowPrompt, slowFor, _ := strings.Cut(*slow, "=")
	delay, _ := time.ParseDuration(slowFor)
	script := func(r mockmodel.Request) mockmodel.Reply {
		if log != nil {
			fmt.Fprintf(log, "%s\n", r.Body)
		}
		reply := mockmodel.Directives(r)
		if slowPrompt != "" && strings.TrimSpace(r.LastUserText()) == slowPrompt {
			reply.Delay = delay
		}
		return reply
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
