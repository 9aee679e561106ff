//go:build !linux

package codex

import "github.com/fsnotify/fsnotify"

// creations is the thread watch's source where there is no inotify:
// fsnotify's (kqueue on macOS, where a folder's watch tells of its
// entries, not of writes to the files in it), its creations (and moves
// into a folder) alone.
type creations struct {
	*fsnotify.Watcher
	created chan string
	lost    chan error
}

func newCreations() (*creations, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	c := &creations{Watcher: fw, created: make(chan string, 64), lost: make(chan error, 1)}
	go func() {
		defer close(c.created)
		defer close(c.lost)
		for {
			select {
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Create) {
					c.created <- ev.Name
				}
			case err, ok := <-fw.Errors:
				if !ok {
					return
				}
				select {
				case c.lost <- err:
				default:
				}
			}
		}
	}()
	return c, nil
}
