package wrapper

import (
	"syscall"

	"cx/internal/testpoint"
)

// withParentDeath also asks Linux to send sig to the child when its parent
// dies (PR_SET_PDEATHSIG): a second guard beside the lifeline, at once
// rather than after the polite stop. Tests turn it off (CX_TEST_OFF=
// pdeathsig) so that the lifeline, the guard macOS has, is proven alone.
func withParentDeath(a *syscall.SysProcAttr, sig syscall.Signal) *syscall.SysProcAttr {
	if !testpoint.Off("pdeathsig") {
		a.Pdeathsig = sig
	}
	return a
}
