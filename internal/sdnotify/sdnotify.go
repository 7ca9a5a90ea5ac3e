// Package sdnotify tells systemd about a service's state with the
// notification protocol of sd_notify(3): datagrams of newline-separated
// KEY=VALUE assignments sent to the unix socket named by NOTIFY_SOCKET.
//
// It is a few dozen lines over net.UnixConn rather than a dependency:
// depotfs needs READY, RELOADING, STOPPING, STATUS and WATCHDOG, nothing
// that needs sd-bus or file-descriptor passing. It must not decide when a
// service is ready; its caller does.
package sdnotify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// States a service sends, as defined by sd_notify(3).
const (
	Ready     = "READY=1"
	Reloading = "RELOADING=1"
	Stopping  = "STOPPING=1"
	Watchdog  = "WATCHDOG=1"
)

// Notifier sends notifications to systemd. A nil *Notifier (no
// NOTIFY_SOCKET: not started by systemd, or Type is not notify) accepts
// every call and sends nothing. It is safe for concurrent use.
type Notifier struct {
	mu   sync.Mutex
	conn *net.UnixConn
}

// FromEnv returns a Notifier for the socket named by NOTIFY_SOCKET, or nil
// when the variable is unset or empty. A name starting with '@' is a Linux
// abstract socket, as systemd documents.
func FromEnv() (*Notifier, error) {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return nil, nil
	}
	if !strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "@") {
		return nil, fmt.Errorf("NOTIFY_SOCKET=%q: want an absolute path or an abstract socket name starting with @", name)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("NOTIFY_SOCKET: %w", err)
	}
	return &Notifier{conn: conn}, nil
}

// Notify sends the given assignments (Ready, "STATUS=...") in one
// datagram.
func (n *Notifier) Notify(states ...string) error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conn == nil {
		return errClosed
	}
	msg := strings.Join(states, "\n")
	if _, err := n.conn.Write([]byte(msg)); err != nil {
		return fmt.Errorf("sd_notify %q: %w", msg, err)
	}
	return nil
}

// Reloading sends RELOADING=1 with the CLOCK_MONOTONIC timestamp that
// Type=notify-reload requires; send Ready once the reload is done.
func (n *Notifier) Reloading() error {
	return n.Notify(Reloading, "MONOTONIC_USEC="+strconv.FormatInt(monotonicUsec(), 10))
}

// Close releases the socket; later notifications fail.
func (n *Notifier) Close() error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conn == nil {
		return nil
	}
	err := n.conn.Close()
	n.conn = nil
	return err
}

var errClosed = errors.New("sdnotify: notifier closed")

// WatchdogInterval returns how often systemd expects WATCHDOG=1 (half of
// WATCHDOG_USEC, as sd_watchdog_enabled(3) advises), or false when the
// watchdog is off or meant for another process (WATCHDOG_PID).
func WatchdogInterval() (time.Duration, bool) {
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0, false
	}
	usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || usec <= 0 {
		return 0, false
	}
	return time.Duration(usec) * time.Microsecond / 2, true
}

// RunWatchdog sends WATCHDOG=1 every interval while healthy reports nil,
// until ctx is done. A failed check skips the ping, so systemd restarts a
// service that stays unhealthy longer than WATCHDOG_USEC; onFail (may be
// nil) hears why. It returns when ctx is done.
func (n *Notifier) RunWatchdog(ctx context.Context, interval time.Duration, healthy func(context.Context) error, onFail func(error)) {
	if n == nil || interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		if healthy != nil {
			err = healthy(ctx)
		}
		if err == nil {
			err = n.Notify(Watchdog)
		}
		if err != nil && onFail != nil {
			onFail(err)
		}
	}
}

// monotonicUsec reads CLOCK_MONOTONIC in microseconds, the clock systemd
// compares RELOADING=1 against.
func monotonicUsec() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano() / 1e3
}
