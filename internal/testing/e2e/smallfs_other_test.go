//go:build !linux

package e2e

import "errors"

// mountSmall needs Linux's tmpfs: elsewhere the CX_HOME-full fault is off.
func mountSmall(dir string, size int64) (func(), error) {
	return nil, errors.New("a small filesystem for CX_HOME needs Linux's tmpfs")
}
