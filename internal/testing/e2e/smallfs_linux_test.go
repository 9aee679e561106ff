package e2e

import (
	"fmt"
	"syscall"
)

// mountSmall mounts a tmpfs of size bytes on dir (empty), so that it can be
// filled without filling the machine's disk; the returned func unmounts it.
// It needs the right to mount (root in CI's container).
func mountSmall(dir string, size int64) (func(), error) {
	if err := syscall.Mount("cx-chaos", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return nil, fmt.Errorf("mount a tmpfs on %s: %w", dir, err)
	}
	return func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) }, nil
}
