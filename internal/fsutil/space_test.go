package fsutil

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

func TestFull(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		err  error
		full bool
	}{
		{"no error", nil, false},
		{"ENOSPC, wrapped", fmt.Errorf("write journal: %w", syscall.ENOSPC), true},
		{"another error, room left", errors.New("disk I/O error (4874)"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Full(dir, tc.err)
			var fe *FullError
			if errors.As(got, &fe) != tc.full || !errors.Is(got, tc.err) {
				t.Fatalf("Full(%v) = %v", tc.err, got)
			}
			if tc.full && !strings.Contains(got.Error(), "the disk holding "+dir+" is full") {
				t.Fatalf("the error does not say it: %v", got)
			}
		})
	}
}
