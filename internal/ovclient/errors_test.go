package ovclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// pythonErrorPage is what Python's http.server answers a method it has no
// handler for (BaseHTTPRequestHandler.send_error's default page).
const pythonErrorPage = `<!DOCTYPE HTML>
<html lang="en">
    <head>
        <meta charset="utf-8">
        <title>Error response</title>
    </head>
    <body>
        <h1>Error response</h1>
        <p>Error code: %d</p>
        <p>Message: Unsupported method (&#x27;PATCH&#x27;).</p>
        <p>Error code explanation: %d - Server does not support this operation.</p>
    </body>
</html>
`

// A server or proxy without PATCH answers 501 with an HTML page: that is a
// missing route, like 404 and 405 — the session is taken as one on a server
// without per-session policies, never retried for ever — and any error
// answer that is not the server's JSON is one bounded line.
func TestNotImplementedIsAMissingRouteAndHTMLOneLine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		switch {
		case r.Method == http.MethodPatch:
			w.WriteHeader(http.StatusNotImplemented)
			fmt.Fprintf(w, pythonErrorPage, 501, 501)
		case r.URL.Path == "/api/v1/sessions":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"status":"ok","result":{"session_id":"cx-x"}}`)
		default:
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, pythonErrorPage+strings.Repeat("<p>padding</p>\n", 200), 502, 502)
		}
	}))
	defer srv.Close()
	c := New(Settings{URL: srv.URL})
	ctx := context.Background()
	ac, err := c.Prepare(ctx, "cx-x", false)
	if err != nil || ac != AutoCommitUnsupported {
		t.Fatalf("Prepare with PATCH answered 501: %q, %v; want %q", ac, err, AutoCommitUnsupported)
	}
	_, err = c.Commit(ctx, "cx-x")
	var e *Error
	if !errors.As(err, &e) || e.Status != 502 || !e.Retryable {
		t.Fatalf("502 from a proxy: %v, want a retryable HTTP 502", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Contains(msg, "<") || len([]rune(e.Message)) > maxBodyLine {
		t.Fatalf("error is not one bounded line of text (%d runes): %q", len([]rune(e.Message)), msg)
	}
	if !strings.Contains(msg, "(an HTML page) Error response Error response Error code: 502 Message: Unsupported method ('PATCH').") {
		t.Fatalf("the page's text is not what the line says: %q", msg)
	}
}
