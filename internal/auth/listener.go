package auth

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/depotfs/depotfs/internal/identity"
)

// Defaults of ListenerOptions.
const (
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultMaxHandshakes    = 256
)

// ListenerOptions configure a Listener. The zero value works.
type ListenerOptions struct {
	// HandshakeTimeout bounds one TLS handshake; zero means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// MaxHandshakes bounds the handshakes in progress at once; zero means
	// DefaultMaxHandshakes. Further connections wait in the kernel's
	// backlog.
	MaxHandshakes int
	// Sink receives every failed handshake; nil drops them.
	Sink EventSink
	// Now is the clock of the failure records; nil means time.Now.
	Now func() time.Time
	// Logger receives failed handshakes at debug level and accept errors;
	// nil means slog.Default().
	Logger *slog.Logger
}

// Listener is a TLS listener that completes each connection's handshake
// before Accept returns it, so that a failed handshake (a refused client
// certificate, a resumed session whose certificate is now revoked, a
// client speaking TLS 1.2) is known with its remote address and reported
// to Sink, which http.Server alone would only print to its error log.
// Accept returns *tls.Conn values, so an http.Server serving it sees
// r.TLS and negotiates HTTP/2 as with any TLS listener.
//
// A Listener owns one accepting goroutine and one per handshake in
// progress; Close stops them all and waits for them. It is safe for
// concurrent use.
type Listener struct {
	inner net.Listener
	cfg   *tls.Config
	opts  ListenerOptions

	conns    chan *tls.Conn
	ctx      context.Context // cancelled by Close, or when the accept loop ends
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	once     sync.Once
	closeErr error
}

// NewListener returns a TLS listener over inner with cfg, and starts
// accepting. Closing it closes inner.
func NewListener(inner net.Listener, cfg *tls.Config, opts *ListenerOptions) *Listener {
	var o ListenerOptions
	if opts != nil {
		o = *opts
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.MaxHandshakes <= 0 {
		o.MaxHandshakes = DefaultMaxHandshakes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
	ctx, cancel := context.WithCancel(context.Background())
	l := &Listener{inner: inner, cfg: cfg, opts: o, conns: make(chan *tls.Conn), ctx: ctx, cancel: cancel}
	l.wg.Go(l.loop)
	return l
}

// Accept returns the next connection whose handshake succeeded.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.ctx.Done():
		return nil, net.ErrClosed
	}
}

// Close stops accepting, aborts handshakes in progress, closes inner and
// waits for the listener's goroutines. Connections already returned by
// Accept are not affected.
func (l *Listener) Close() error {
	l.once.Do(func() {
		l.cancel()
		l.closeErr = l.inner.Close()
		l.wg.Wait()
	})
	return l.closeErr
}

// Addr returns inner's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

func (l *Listener) loop() {
	defer l.cancel()
	sem := make(chan struct{}, l.opts.MaxHandshakes)
	var backoff time.Duration
	for {
		select {
		case sem <- struct{}{}:
		case <-l.ctx.Done():
			return
		}
		c, err := l.inner.Accept()
		if err != nil {
			<-sem
			if l.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Like http.Server: back off on errors such as EMFILE
			// rather than spin or stop serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			l.opts.Logger.Warn("accept failed; retrying", "err", err, "in", backoff)
			select {
			case <-time.After(backoff):
			case <-l.ctx.Done():
			}
			continue
		}
		backoff = 0
		l.wg.Go(func() {
			defer func() { <-sem }()
			l.handshake(c)
		})
	}
}

// handshake completes c's TLS handshake and hands the connection to
// Accept, or reports the failure and closes it.
func (l *Listener) handshake(c net.Conn) {
	ctx, cancel := context.WithTimeout(l.ctx, l.opts.HandshakeTimeout)
	defer cancel()
	tc := tls.Server(c, l.cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		l.report(c.RemoteAddr().String(), err)
		_ = c.Close()
		return
	}
	select {
	case l.conns <- tc:
	case <-l.ctx.Done():
		_ = tc.Close()
	}
}

func (l *Listener) report(remote string, err error) {
	f := Failure{Time: l.opts.Now(), Stage: StageHandshake, Remote: remote, Reason: Reason(err), Err: err}
	if ce, ok := errors.AsType[*CertError](err); ok && ce.presented() {
		f.Method, f.Subject, f.Serial, f.Resumed = identity.MethodCert, ce.Subject, ce.Serial, ce.Resumed
	}
	l.opts.Logger.Debug("tls handshake failed", "remote", remote, "reason", f.Reason, "resumed", f.Resumed, "err", err)
	if l.opts.Sink != nil {
		l.opts.Sink.AuthFailure(l.ctx, f)
	}
}
