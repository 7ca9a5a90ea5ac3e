package integration_test

import (
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// notification is one datagram depotfs sent to the test's NOTIFY_SOCKET,
// with what was true when it arrived.
type notification struct {
	msg     string
	mounted bool   // the mount was up when READY=1 arrived
	dialErr error  // dialling the MCP address named in STATUS, for READY=1
	addr    string // that address
}

// listenNotify plays systemd: it opens a unixgram socket and returns its
// path and the notifications received, checking the mount and the
// listener the moment READY=1 arrives.
func listenNotify(t *testing.T, mount string) (string, <-chan notification) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	out := make(chan notification, 64)
	go func() {
		defer close(out)
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			nt := notification{msg: string(buf[:n])}
			if strings.Contains(nt.msg, "READY=1") {
				nt.mounted = isMounted(mount)
				for _, line := range strings.Split(nt.msg, "\n") {
					if status, ok := strings.CutPrefix(line, "STATUS=serving MCP on "); ok {
						if u, err := url.Parse(status); err == nil {
							nt.addr = u.Host
						}
					}
				}
				var c net.Conn
				if c, nt.dialErr = net.DialTimeout("tcp", nt.addr, 5*time.Second); nt.dialErr == nil {
					c.Close()
				}
			}
			select {
			case out <- nt:
			default:
			}
		}
	}()
	return path, out
}

func nextNotification(t *testing.T, ch <-chan notification, want string) notification {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case n, ok := <-ch:
			if !ok {
				t.Fatalf("notify socket closed before %s", want)
			}
			if strings.Contains(n.msg, want) {
				return n
			}
			t.Logf("notification %q (waiting for %s)", n.msg, want)
		case <-timeout:
			t.Fatalf("no %s notification within 30s", want)
		}
	}
}

// TestSystemdNotify: depotfs sends READY=1 only once the mount is up and
// the MCP listener accepts connections, WATCHDOG=1 while WATCHDOG_USEC is
// set, and STOPPING=1 when it is told to stop.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	mount := filepath.Join(t.TempDir(), "mnt")
	sock, notes := listenNotify(t, mount)
	d := startDaemon(t, daemonConfig{transport: overHTTP, mount: mount,
		env: []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=200000"}})

	first := nextNotification(t, notes, "")
	if !strings.HasPrefix(first.msg, "READY=1") {
		t.Fatalf("first notification %q, want READY=1", first.msg)
	}
	if !first.mounted {
		t.Error("READY=1 arrived before the mount was up")
	}
	if first.dialErr != nil || !strings.Contains(d.url, first.addr) {
		t.Errorf("READY=1 named %q (daemon at %s); dial: %v", first.addr, d.url, first.dialErr)
	}
	nextNotification(t, notes, "WATCHDOG=1")
	nextNotification(t, notes, "WATCHDOG=1")

	d.stop()
	nextNotification(t, notes, "STOPPING=1")
}
