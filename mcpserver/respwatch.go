package mcpserver

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrReaderStalled reports a client that stopped reading a long response
// (a backup or an export), or read it slower than the minimum rate: the
// server cuts it rather than hold what the response reads from (a spool
// file, a snapshot) for the client's pace.
var ErrReaderStalled = errors.New("the client stopped reading the response")

// watchedResponse bounds how slowly a client may read a long response:
// every write must finish within idle (the connection's write deadline is
// moved ahead before each), and once idle has passed since the first
// byte, the bytes written must average minRate per second. It is the
// response twin of watchedBody, under the same limits.
type watchedResponse struct {
	w       http.ResponseWriter
	ctl     *http.ResponseController
	idle    time.Duration
	minRate int64 // bytes per second; <= 0: none
	start   time.Time
	written int64
}

func newWatchedResponse(w http.ResponseWriter, lim HTTPLimits) *watchedResponse {
	return &watchedResponse{w: w, ctl: http.NewResponseController(w), idle: lim.BodyIdleTimeout, minRate: lim.BodyMinRate}
}

func (r *watchedResponse) Write(p []byte) (int, error) {
	now := time.Now()
	if r.start.IsZero() {
		r.start = now
	}
	if took := now.Sub(r.start); r.minRate > 0 && took > r.idle && float64(r.written) < float64(r.minRate)*took.Seconds() {
		return 0, fmt.Errorf("%w: %d bytes in %v, under the minimum of %d bytes/s (--http-body-min-rate)", ErrReaderStalled, r.written, took.Round(time.Second), r.minRate)
	}
	_ = r.ctl.SetWriteDeadline(now.Add(r.idle))
	n, err := r.w.Write(p)
	r.written += int64(n)
	if err != nil {
		if isTimeout(err) {
			return n, fmt.Errorf("%w: nothing read for %v after %d bytes (--http-body-idle-timeout): %v", ErrReaderStalled, r.idle, r.written, err)
		}
		return n, err
	}
	return n, nil
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
