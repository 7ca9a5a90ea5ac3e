package sdnotify_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/sdnotify"
)

// listen opens a unixgram socket as systemd would and points NOTIFY_SOCKET
// at it.
func listen(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return conn
}

func receive(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, _, err := conn.ReadFromUnix(buf)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	return string(buf[:n])
}

func TestNotify(t *testing.T) {
	conn := listen(t)
	n, err := sdnotify.FromEnv()
	if err != nil || n == nil {
		t.Fatalf("FromEnv: %v, %v", n, err)
	}
	defer n.Close()
	if err := n.Notify(sdnotify.Ready, "STATUS=serving"); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, conn); got != "READY=1\nSTATUS=serving" {
		t.Errorf("got %q", got)
	}
	if err := n.Reloading(); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, conn); !strings.HasPrefix(got, "RELOADING=1\nMONOTONIC_USEC=") || strings.HasSuffix(got, "=0") {
		t.Errorf("got %q", got)
	}
	n.Close()
	if err := n.Notify(sdnotify.Stopping); err == nil {
		t.Error("Notify after Close succeeded")
	}
}

func TestNoSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n, err := sdnotify.FromEnv()
	if err != nil || n != nil {
		t.Fatalf("FromEnv without NOTIFY_SOCKET: %v, %v", n, err)
	}
	if err := n.Notify(sdnotify.Ready); err != nil {
		t.Errorf("nil notifier: %v", err)
	}
	t.Setenv("NOTIFY_SOCKET", "relative.sock")
	if _, err := sdnotify.FromEnv(); err == nil {
		t.Error("a relative NOTIFY_SOCKET was accepted")
	}
}

func TestWatchdogInterval(t *testing.T) {
	for _, tc := range []struct {
		usec, pid string
		want      time.Duration
		ok        bool
	}{
		{"", "", 0, false},
		{"2000000", "", time.Second, true},
		{"2000000", "1", 0, false}, // meant for another process
		{"bogus", "", 0, false},
	} {
		t.Setenv("WATCHDOG_USEC", tc.usec)
		t.Setenv("WATCHDOG_PID", tc.pid)
		got, ok := sdnotify.WatchdogInterval()
		if got != tc.want || ok != tc.ok {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: %v %v, want %v %v", tc.usec, tc.pid, got, ok, tc.want, tc.ok)
		}
	}
}

// TestRunWatchdog: pings while healthy, none while the check fails.
func TestRunWatchdog(t *testing.T) {
	conn := listen(t)
	n, err := sdnotify.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithCancel(context.Background())
	healthy := make(chan error, 1)
	healthy <- errors.New("store cannot commit")
	var failed []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.RunWatchdog(ctx, 10*time.Millisecond, func(context.Context) error {
			select {
			case err := <-healthy:
				return err
			default:
				return nil
			}
		}, func(err error) { failed = append(failed, err) })
	}()
	if got := receive(t, conn); got != sdnotify.Watchdog {
		t.Errorf("got %q", got)
	}
	cancel()
	<-done
	if len(failed) != 1 {
		t.Errorf("failures reported: %v, want the one failed check", failed)
	}
}
