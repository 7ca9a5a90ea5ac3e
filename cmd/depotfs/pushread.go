package main

import (
	"fmt"
	"io"
	"os"

	"github.com/depotfs/depotfs/internal/beneath"
)

// steadyReader reads the size bytes of a file that fstat showed before
// the first read, and holds back the last of them until a second fstat
// shows the same size, modification and change time: a file written,
// truncated or extended while it was read fails the read instead of
// reaching the server as a mix of two versions. Because the last bytes
// are never sent, the server sees a body cut short and stores nothing.
//
// The check is GNU tar's ("file changed as we read it") and rclone's
// ("source file is being updated"); like theirs it cannot see a write
// that keeps the size and both times, which a normal write(2) cannot.
type steadyReader struct {
	f      *os.File
	name   string // for messages
	before beneath.Stat
	left   int64
	sent   *int64 // bytes handed over, added to as they are
	prog   *progress
	failed error // why a read failed
}

func newSteadyReader(f *os.File, name string, before beneath.Stat, prog *progress, sent *int64) *steadyReader {
	return &steadyReader{f: f, name: name, before: before, left: before.Size, prog: prog, sent: sent}
}

func (r *steadyReader) Read(p []byte) (int, error) {
	n, err := r.read(p)
	if err != nil && err != io.EOF {
		r.failed = err
	}
	return n, err
}

func (r *steadyReader) read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.f.Read(p)
	r.left -= int64(n)
	if err == io.EOF && r.left > 0 {
		return 0, fmt.Errorf("%s: %w while it was read: it shrank from %d bytes; nothing of it was stored", r.name, errChanged, r.before.Size)
	}
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("%s: %w", r.name, err)
	}
	if r.left == 0 {
		after, err := beneath.Fstat(r.f)
		if err != nil {
			return 0, err
		}
		if !after.Same(r.before) {
			return 0, fmt.Errorf("%s: %w while it was read (size %d→%d, mtime %s→%s); nothing of it was stored, push it again when nothing writes it", r.name, errChanged,
				r.before.Size, after.Size, r.before.MTime.Format(timeNano), after.MTime.Format(timeNano))
		}
	}
	r.prog.bytes.Add(int64(n))
	*r.sent += int64(n)
	return n, nil
}

// timeNano formats times in messages of a changed file.
const timeNano = "15:04:05.000000000"
