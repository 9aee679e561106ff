//go:build !linux

package wrapper

import "syscall"

// withParentDeath: no parent-death signal outside Linux; the lifeline
// alone keeps the child from outliving the supervisor.
func withParentDeath(a *syscall.SysProcAttr, _ syscall.Signal) *syscall.SysProcAttr { return a }
