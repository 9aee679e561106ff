// Package rollout reads Codex rollout files (<Codex home>/sessions/…/rollout-*.jsonl)
// incrementally: from a cursor to the last complete line, at a cost
// proportional to the new bytes. It notices a file that shrank or was
// rewritten, turns unreadable or oversized lines into counted placeholders,
// and assembles records into turns (see turns.go).
//
// Rollouts Codex compressed (rollout-*.jsonl.zst) are read the same way,
// decompressed as they stream (klauspost/compress's zstd: pure Go,
// streaming, the well-kept implementation).
package rollout

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/klauspost/compress/zstd"
)

// Cursor is how far a rollout has been read, with enough of the file's
// identity to notice that it was replaced, truncated or rewritten.
type Cursor struct {
	Offset int64  // where the next read starts: always the start of a line
	Seen   int64  // everything before this was read (and counted) already; ≥ Offset
	Inode  uint64 // the file's inode when read
	Size   int64  // the file's size when read
	Head   string // sha256 of the first min(Seen, headBytes) bytes
}

// headBytes is how much of the file's start the cursor fingerprints.
const headBytes = 4096

// defaultMaxLine is the default longest line read whole ([capture] max_line_bytes).
const defaultMaxLine = 16 << 20

// Line is one complete line of the file.
type Line struct {
	Offset int64
	Size   int64  // bytes, without the newline
	Data   []byte // nil when the line was longer than the limit
	// TooLong is set when the line exceeded the limit; Data is nil.
	TooLong bool
}

// ReadResult describes one incremental read.
type ReadResult struct {
	Cursor    Cursor
	Rewritten bool  // the file no longer matched the cursor: read from the start
	Lines     int   // complete lines read
	Bytes     int64 // bytes consumed
}

// readLines calls fn for each complete line from cur onwards and returns the
// new cursor. A last line without its newline is left for the next read.
// Lines longer than maxLine are reported with TooLong and no data, without
// holding them in memory. Line.Data is only valid during the call.
func readLines(path string, cur Cursor, maxLine int, fn func(Line) error) (ReadResult, error) {
	if maxLine <= 0 {
		maxLine = defaultMaxLine
	}
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is said once
		}
		return ReadResult{Cursor: cur}, fmt.Errorf("open rollout %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ReadResult{Cursor: cur}, fmt.Errorf("stat rollout %s: %w", path, err)
	}
	inode := inodeOf(fi)
	res := ReadResult{Cursor: cur}
	if cur.Seen < cur.Offset {
		cur.Seen = cur.Offset
	}
	var src io.Reader = f
	zst := Compressed(path)
	switch {
	case zst:
		// Codex compresses only threads it is done with, whole: a file the
		// cursor already read has nothing new, any other is read from the
		// start (a cursor from its plain sibling included: callers dedupe
		// turns by key).
		if cur.Seen > 0 && inode == cur.Inode && fi.Size() == cur.Size {
			return res, nil
		}
		res.Rewritten = cur.Seen > 0
		cur = Cursor{}
		dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return res, fmt.Errorf("read rollout %s: %w", path, err)
		}
		defer dec.Close()
		src = dec
	case cur.Seen > 0 && !sameFile(f, fi, inode, cur):
		res.Rewritten = true
		cur = Cursor{}
	}
	if !zst {
		if _, err := f.Seek(cur.Offset, io.SeekStart); err != nil {
			return res, fmt.Errorf("seek rollout %s: %w", path, err)
		}
	}
	br := bufio.NewReaderSize(src, bufferFor(zst, fi.Size()-cur.Offset))
	off := cur.Offset
	var long []byte // accumulates a line spanning buffer fills (up to maxLine)
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) <= maxLine {
				long = append(long, chunk...)
				continue
			}
			// Over the limit: skip to the end of the line without keeping it.
			n := int64(len(long) + len(chunk))
			long = long[:0]
			complete := false
			for {
				c, err := br.ReadSlice('\n')
				n += int64(len(c))
				if err == nil {
					complete = true
					break
				}
				if !errors.Is(err, bufio.ErrBufferFull) {
					break
				}
			}
			if !complete {
				break // a half-written long line: leave it for next time
			}
			if err := fn(Line{Offset: off, Size: n - 1, TooLong: true}); err != nil {
				return res, err
			}
			off += n
			res.Lines++
			continue
		}
		if err != nil { // io.EOF: chunk is an incomplete last line (or empty)
			if !errors.Is(err, io.EOF) {
				return res, fmt.Errorf("read rollout %s: %w", path, err)
			}
			break
		}
		line := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		n := int64(len(line))
		ln := Line{Offset: off, Size: n - 1, Data: line[:n-1]}
		if n-1 > int64(maxLine) {
			ln.Data, ln.TooLong = nil, true
		}
		if err := fn(ln); err != nil {
			return res, err
		}
		long = long[:0]
		off += n
		res.Lines++
	}
	res.Bytes = off - cur.Offset
	head := ""
	if !zst { // a compressed file is told by its inode and size
		if head, err = headHash(f, off); err != nil {
			return res, fmt.Errorf("rollout %s: %w", path, err)
		}
	}
	res.Cursor = Cursor{Offset: off, Seen: off, Inode: inode, Size: fi.Size(), Head: head}
	return res, nil
}

// readBuffer is the most a read of a rollout buffers at once; a line
// longer is gathered across fills (up to maxLine).
const readBuffer = 256 << 10

// bufferFor is the buffer a read of unread plain bytes needs: a hook reads
// a turn or two, and a 256 KiB buffer made for each (zeroed, its pages
// faulted in) was a tenth of the hook host's work on a capture. A
// compressed file is read whole, through its decoder.
func bufferFor(compressed bool, unread int64) int {
	if compressed || unread >= readBuffer {
		return readBuffer
	}
	return int(max(unread+1, 4<<10))
}

// sameFile reports whether the open file is still the one the cursor was
// taken from: same inode, not shorter than the cursor, same first bytes.
func sameFile(f *os.File, fi os.FileInfo, inode uint64, cur Cursor) bool {
	if cur.Inode != 0 && inode != 0 && inode != cur.Inode {
		return false
	}
	if fi.Size() < cur.Seen {
		return false
	}
	if cur.Head != "" {
		h, err := headHash(f, cur.Seen)
		if err != nil || h != cur.Head {
			return false
		}
	}
	return true
}

func headHash(f *os.File, upTo int64) (string, error) {
	n := min(upTo, headBytes)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read head: %w", err)
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:8]), nil
}

// Compressed reports whether a rollout is zstd-compressed (Codex's
// local_thread_store_compression keeps cold threads as rollout-*.jsonl.zst).
func Compressed(path string) bool { return strings.HasSuffix(path, ".zst") }

// Open opens a rollout for reading from its start, decompressing a
// compressed one as it streams.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil || !Compressed(path) {
		return f, err
	}
	dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read rollout %s: %w", path, err)
	}
	return zstdFile{dec, f}, nil
}

type zstdFile struct {
	*zstd.Decoder
	f *os.File
}

func (z zstdFile) Close() error { z.Decoder.Close(); return z.f.Close() }

// ReadAll reads a whole rollout, decompressed.
func ReadAll(path string) ([]byte, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read rollout %s: %w", path, err)
	}
	return data, nil
}

func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// Unread is how much of the rollout at path lies past offset (0 when there
// is no path, or it cannot be read).
func Unread(path string, offset int64) int64 {
	if path == "" {
		return 0
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return max(0, fi.Size()-offset)
}
