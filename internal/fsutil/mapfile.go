package fsutil

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrEmpty is a file with nothing to map.
var ErrEmpty = errors.New("empty file")

// MapFile maps path read only: its pages are read as they are touched, so
// a reader of a few records of a large file neither reads nor copies the
// rest. unmap releases the mapping; the bytes must not be used after it.
// The mapping keeps the file's contents as they were if the file is
// replaced by a rename (as WriteReplace does); a file truncated in place
// while mapped faults its reader, so map only files written that way.
func MapFile(path string) (data []byte, unmap func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", path, err)
	}
	if fi.Size() == 0 {
		return nil, nil, fmt.Errorf("map %s: %w", path, ErrEmpty)
	}
	if fi.Size() != int64(int(fi.Size())) {
		return nil, nil, fmt.Errorf("map %s: %d bytes: too large", path, fi.Size())
	}
	data, err = unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", path, err)
	}
	return data, func() { _ = unix.Munmap(data) }, nil
}
