package mcpserver

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// checkHost is the HTTP listener's DNS-rebinding guard, in front of every
// path. A web page whose name was made to resolve to 127.0.0.1 reaches a
// local server with its own name in the Host header and its own origin in
// the Origin header; so a request that arrives over loopback must name a
// loopback host or one the operator configured (Options.PublicURL's host,
// Options.AllowedHosts), and a request that carries an Origin header
// (only browsers send one) must come from such a host too, on any
// listener. Anything else is answered 403 with the flag that would allow
// it, logged, and audited once per address per burst. It returns false
// when it has refused r.
func (s *Server) checkHost(w http.ResponseWriter, r *http.Request) bool {
	why := s.hostRefusal(r)
	if why == "" {
		return true
	}
	http.Error(w, "depotfs: "+why, http.StatusForbidden)
	s.refusals.note("host "+tool.HostOf(r.RemoteAddr), func(n int) {
		who, _ := identity.FromContext(r.Context())
		s.log.Warn("http request refused: host not allowed", "remote", r.RemoteAddr, "host", r.Host, "origin", r.Header.Get("Origin"), "refusals", n)
		s.auditEdge(&audit.Record{Event: audit.EventAuth, Stage: "host", Transport: "http", Remote: r.RemoteAddr,
			Identity: who.String(), Auth: string(who.Method), Serial: who.Serial, TokenID: who.TokenID, Decision: audit.Deny,
			Reason: fmt.Sprintf("%s (%d refusal(s) from this address in this burst)", why, n)}, "a refused host")
	})
	return false
}

// hostRefusal says why r is refused by checkHost, or "" if it is not.
func (s *Server) hostRefusal(r *http.Request) string {
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || !s.allowedHost(u.Hostname()) {
			return fmt.Sprintf("Origin %q is not a host this server answers to (DNS-rebinding protection): "+
				"a page served from another site may not call it; if this origin is yours, name its host with --allowed-hosts", origin)
		}
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if local == nil || !isLoopback(hostOnly(local.String())) {
		return ""
	}
	host := hostOnly(r.Host)
	if s.allowedHost(host) {
		return ""
	}
	return fmt.Sprintf("Host %q is not a host this server answers to on its loopback listener (DNS-rebinding protection): "+
		"if a proxy on this host forwards requests for it, start depotfs serve with --allowed-hosts %s (or --public-url https://%s)",
		r.Host, host, host)
}

// allowedHost reports whether host (no port) is loopback or configured.
func (s *Server) allowedHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if isLoopback(host) {
		return true
	}
	if u, err := url.Parse(s.opts.PublicURL); err == nil && u.Host != "" && strings.EqualFold(u.Hostname(), host) {
		return true
	}
	for _, h := range s.opts.AllowedHosts {
		if strings.EqualFold(hostOnly(h), host) {
			return true
		}
	}
	return false
}

// hostOnly returns the host of a host[:port] (brackets of IPv6 removed).
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// isLoopback reports whether host names a loopback interface.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
