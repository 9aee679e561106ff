package ledger

import (
	"errors"
	"os"
	"path/filepath"

	"cx/internal/config"
)

// Path is the ledger's file in CX_HOME home.
func Path(home string) string { return filepath.Join(home, FileName) }

// Fix is what to do about the ledger in home that cannot be opened, by
// why.
func Fix(home string, err error) string {
	path := Path(home)
	switch {
	case errors.Is(err, config.ErrHome):
		return "move what stands at " + home + " aside, or set CX_HOME to a directory cx may create and write"
	case IsDamaged(err):
		return "move " + path + " aside; cx starts a new ledger (rollouts keep every session)"
	case IsFull(err):
		return "make room on the disk holding " + home + ", or set CX_HOME to a directory on another disk"
	case CannotWrite(err):
		return "make " + home + " writable, or set CX_HOME to a directory that is (meanwhile search, show, sessions and status read it as it is)"
	}
	if _, serr := os.Stat(filepath.Join(home, "logs", "cx.log")); serr == nil {
		return "see " + filepath.Join(home, "logs", "cx.log")
	}
	return "check that " + path + " can be created and written"
}

// Advice is what to do when err (a ledger failure) is the ledger's
// own trouble — damaged, or in a CX_HOME cx cannot use or write, or on a
// full disk — and ""
// otherwise: a command that failed on it says so beside its error.
func Advice(home string, err error) string {
	if errors.Is(err, config.ErrHome) || IsDamaged(err) || CannotWrite(err) || IsFull(err) {
		return "to fix: " + Fix(home, err)
	}
	return ""
}
