package vfs_test

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs"
)

// TestPlaceholderNonblock checks how a scanner skips placeholders without
// waiting for the fetch timeout: an O_NONBLOCK open fails at once with
// EAGAIN, having asked the agents for the file all the same (grep -r and
// tar open with O_NONBLOCK), and user.depotfs.state tells placeholders
// from stored files.
func TestPlaceholderNonblock(t *testing.T) {
	st, _ := newStore(t, nil)
	m, b, _ := fetchMount(t, st, time.Minute)
	declarePlaceholder(t, st, m, "/scan/later.bin", 10)
	put(t, st, m, store.PutRequest{Path: "/scan/here.txt", Data: []byte("here")})

	start := time.Now()
	_, err := os.OpenFile(m.path("/scan/later.bin"), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("O_NONBLOCK open of a placeholder: %v, want EAGAIN", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("O_NONBLOCK open of a placeholder took %v, want under 100 ms", d)
	}
	if s := b.Stats(); s.Pending != 1 || s.Waiting != 0 {
		t.Errorf("after an O_NONBLOCK open: %+v, want one request and no reader waiting", s)
	}
	f, err := os.OpenFile(m.path("/scan/here.txt"), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("O_NONBLOCK open of a stored file: %v", err)
	}
	f.Close()

	for p, want := range map[string]string{"/scan/later.bin": vfs.StatePlaceholder, "/scan/here.txt": vfs.StateStored} {
		buf := make([]byte, 64)
		n, err := unix.Getxattr(m.path(p), vfs.XattrState, buf)
		if err != nil || string(buf[:n]) != want {
			t.Errorf("%s %s = %q, %v; want %q", p, vfs.XattrState, buf[:n], err, want)
		}
	}
	if _, err := unix.Getxattr(m.path("/scan"), vfs.XattrState, make([]byte, 64)); !errors.Is(err, unix.ENODATA) {
		t.Errorf("a directory's %s: %v, want ENODATA", vfs.XattrState, err)
	}
}
