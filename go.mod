module cx

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/creack/pty v1.1.24
	github.com/mattn/go-isatty v0.0.24
	github.com/oklog/run v1.2.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
)
