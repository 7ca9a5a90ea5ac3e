package sdnotify

import "golang.org/x/sys/unix"

// monotonicUsec reads CLOCK_MONOTONIC in microseconds, the clock systemd
// compares RELOADING=1 against.
func monotonicUsec() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano() / 1e3
}
