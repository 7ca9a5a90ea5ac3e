package vfs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/vfs"
)

// Environment of the helper process that mounts and then dies without
// unmounting (see TestMain).
const (
	envStaleDir = "VFS_TEST_STALE_MOUNT_DIR"
	envStaleDB  = "VFS_TEST_STALE_MOUNT_DB"
	helperReady = "MOUNTED"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envStaleDir); dir != "" {
		staleMountHelper(dir, os.Getenv(envStaleDB))
		return
	}
	os.Exit(m.Run())
}

// staleMountHelper mounts a store at dir, says so, and waits to be killed.
func staleMountHelper(dir, db string) {
	st, err := bolt.Open(db, nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if _, err := vfs.Mount(context.Background(), dir, st, nil); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println(helperReady)
	select {}
}

// isMounted reports whether anything is mounted at dir.
func isMounted(tb testing.TB, dir string) bool {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// TestStaleMountRecovery kills a process that is serving a mount, which
// leaves a dead FUSE mount behind, and mounts over it.
func TestStaleMountRecovery(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mnt")
	t.Cleanup(func() {
		// If the test failed before recovering, do not leave the dead mount.
		for isMounted(t, dir) {
			if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
				t.Errorf("detach %s: %v", dir, err)
				return
			}
		}
	})
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), envStaleDir+"="+dir, envStaleDB+"="+filepath.Join(t.TempDir(), "helper.db"))
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { helper.Process.Kill(); helper.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != helperReady {
		t.Fatalf("helper did not mount: %q %v", sc.Text(), sc.Err())
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(dir, &sfs); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("after killing the server, statfs gives %v, want ENOTCONN", err)
	}

	st, _ := newStore(t, nil)
	put(t, st, nil, store.PutRequest{Path: "/hello", Data: []byte("recovered")})
	m := mountAt(t, dir, st, nil)
	if got := string(readFile(t, m.path("/hello"))); got != "recovered" {
		t.Errorf("read %q", got)
	}
	if !strings.Contains(m.log.String(), "stale") {
		t.Errorf("recovery was not logged:\n%s", m.log)
	}
}

// TestMountRefusesLiveMount checks that Mount does not stack on a live
// mount, ours or anyone's.
func TestMountRefusesLiveMount(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	if _, err := vfs.Mount(context.Background(), m.Dir(), st, nil); !errors.Is(err, vfs.ErrMounted) {
		t.Errorf("mount over a depotfs mount: %v, want ErrMounted", err)
	}

	tmpfs := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(tmpfs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", tmpfs, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(tmpfs, syscall.MNT_DETACH) })
	_, err := vfs.Mount(context.Background(), tmpfs, st, nil)
	if !errors.Is(err, vfs.ErrMounted) || !strings.Contains(err.Error(), "tmpfs") {
		t.Errorf("mount over tmpfs: %v, want ErrMounted naming tmpfs", err)
	}
}

func TestMountCreatesDir(t *testing.T) {
	st, _ := newStore(t, nil)
	dir := filepath.Join(t.TempDir(), "a", "b", "mnt")
	m := mountAt(t, dir, st, nil)
	if m.Dir() != dir {
		t.Errorf("Dir() = %s, want %s", m.Dir(), dir)
	}
	fi, err := os.Stat(filepath.Dir(dir))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("created parent: %v, %v", fi, err)
	}
}

func TestUnmount(t *testing.T) {
	tests := []struct {
		name    string
		unmount func(t *testing.T, m *testMount)
	}{
		{"twice", func(t *testing.T, m *testMount) {
			if err := m.Unmount(); err != nil {
				t.Fatal(err)
			}
		}},
		{"while a file is open", func(t *testing.T, m *testMount) {
			f, err := os.Open(m.path("/f"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := m.Unmount(); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Read(make([]byte, 1)); err == nil {
				t.Errorf("reading a file of the aborted mount succeeded")
			}
		}},
		{"while a process has its cwd inside", func(t *testing.T, m *testMount) {
			sleeper := exec.Command("sleep", "60")
			sleeper.Dir = m.path("/")
			if err := sleeper.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
			if err := m.Unmount(); err != nil {
				t.Fatal(err)
			}
		}},
		{"from outside", func(t *testing.T, m *testMount) {
			if err := syscall.Unmount(m.Dir(), 0); err != nil {
				t.Fatal(err)
			}
			m.Wait()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := newStore(t, nil)
			m := mount(t, st, nil)
			// Larger than what an open hands to the page cache, so
			// that a read after the abort must reach the server.
			put(t, st, m, store.PutRequest{Path: "/f", Data: pattern(vfs.PassthroughMinSize-1, 1)})
			tt.unmount(t, m)
			if err := m.Unmount(); err != nil {
				t.Errorf("Unmount: %v", err)
			}
			waited := make(chan struct{})
			go func() { m.Wait(); close(waited) }()
			select {
			case <-waited:
			case <-time.After(10 * time.Second):
				t.Fatal("Wait did not return after Unmount")
			}
			if isMounted(t, m.Dir()) {
				t.Errorf("%s is still mounted", m.Dir())
			}
		})
	}
}
