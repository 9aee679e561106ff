// Command servedir serves a directory over HTTP on 127.0.0.1, as a
// release's download site: release-check installs the snapshot from it
// the way a user runs the installer (curl … | sh). It prints the base URL
// on its first line and serves until killed.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: servedir DIR")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "servedir: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	if err := http.Serve(ln, http.FileServer(http.Dir(os.Args[1]))); err != nil {
		fmt.Fprintf(os.Stderr, "servedir: %v\n", err)
		os.Exit(1)
	}
}
