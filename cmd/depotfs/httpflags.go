package main

import (
	"cmp"
	"flag"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/mcpserver"
)

// httpConfig bounds what HTTP clients can hold: time on a connection,
// connections per address, bytes in flight and sessions.
type httpConfig struct {
	readHeaderTimeout time.Duration
	bodyMinRate       byteSize
	idleTimeout       time.Duration
	maxConnsPerAddr   int
	maxInflight       byteSize
	allowedHosts      []string             // --allowed-hosts
	lim               mcpserver.HTTPLimits // the flags that set one as they are
}

func (c *httpConfig) flags(fs *flag.FlagSet) {
	c.bodyMinRate, c.maxInflight = mcpserver.DefaultBodyMinRate, mcpserver.DefaultMaxInflightBytes
	fs.DurationVar(&c.readHeaderTimeout, "http-read-header-timeout", 10*time.Second, "close an HTTP connection whose request headers take longer than this")
	fs.DurationVar(&c.lim.BodyIdleTimeout, "http-body-idle-timeout", mcpserver.DefaultBodyIdleTimeout, "close an HTTP connection whose request body stops arriving for this long")
	fs.Var(&c.bodyMinRate, "http-body-min-rate", "`size` per second a request body must arrive at on average once --http-body-idle-timeout has passed since it began; a slower one is closed (0: no minimum)")
	fs.DurationVar(&c.idleTimeout, "http-idle-timeout", time.Minute, "close a kept-alive HTTP connection idle between requests for this long")
	fs.IntVar(&c.maxConnsPerAddr, "max-conns-per-addr", 64, "open HTTP connections allowed from one IP address; more are closed at once (0: no limit)")
	fs.Var(&c.maxInflight, "max-inflight-bytes", "memory `size` allowed for request bodies being decoded at once (each charged 6× its size); further requests wait for room before their bodies are read")
	fs.DurationVar(&c.lim.InflightWait, "inflight-wait", mcpserver.DefaultInflightWait, "how long a request waits for room under --max-inflight-bytes before it is answered 503 (retryable)")
	fs.DurationVar(&c.lim.SessionIdleTimeout, "session-idle-timeout", mcpserver.DefaultSessionIdleTimeout, "drop an MCP session unused for this long; its id is then answered 404 and the client starts a new one")
	fs.IntVar(&c.lim.MaxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "live MCP sessions allowed in all; a new one beyond ends the least recently used idle session (its id is then answered 404 and its client starts again), and is answered 503 only when every session is busy")
	fs.IntVar(&c.lim.MaxSessionsPerIdentity, "max-sessions-per-identity", mcpserver.DefaultMaxSessionsPerIdentity, "live MCP sessions allowed to one tenant (every credential with the same grants; every unauthenticated client is the tenant local); its new one beyond ends its own least recently used idle session (whose id is then answered 404), and is answered 503 only when all of its sessions are busy; no other identity's session is ended for it")
	fs.Func("allowed-hosts", "host `name` a request reaching --listen over loopback may carry in its Host header, and a browser's Origin may name, besides loopback names and --public-url's host (repeatable): a TLS-terminating proxy on the same host forwarding Host: depot.example.org; others are refused 403 (DNS-rebinding protection)", appendTo(&c.allowedHosts))
}

func (c *httpConfig) validate() error {
	return cmp.Or(
		failIf(min(c.readHeaderTimeout, c.lim.BodyIdleTimeout, c.idleTimeout, c.lim.InflightWait, c.lim.SessionIdleTimeout) <= 0,
			"--http-*-timeout, --inflight-wait and --session-idle-timeout must be positive durations"),
		failIf(c.maxConnsPerAddr < 0 || c.lim.MaxSessions < 1 || c.lim.MaxSessionsPerIdentity < 1 || c.maxInflight < 1<<20,
			"--max-conns-per-addr must not be negative, --max-sessions and --max-sessions-per-identity at least 1, --max-inflight-bytes at least 1MiB"),
		failIf(slices.ContainsFunc(c.allowedHosts, func(h string) bool { return h == "" || strings.ContainsAny(h, "/ @?#") }),
			"--allowed-hosts takes a host name such as depot.example.org (optionally :port), not a URL"),
	)
}

// limits returns the mcpserver side of the configuration. A zero field
// there means the default, so --http-body-min-rate 0 (no minimum) is -1.
func (c *httpConfig) limits() mcpserver.HTTPLimits {
	l := c.lim
	l.BodyMinRate, l.MaxInflightBytes = cmp.Or(int64(c.bodyMinRate), -1), int64(c.maxInflight)
	return l
}
