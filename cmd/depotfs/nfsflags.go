package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/nfsserver"
	"github.com/depotfs/depotfs/store"
)

// nfsConfig is the read-only NFSv3 export (package nfsserver).
type nfsConfig struct {
	addr   string
	prefix string
	grants grantsFlag
}

func (c *nfsConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "nfs", "", "`address` to serve the depot read-only over NFSv3 (MOUNT and NFS on this one TCP port), e.g. 127.0.0.1:2049; a port alone (:2049) listens on loopback only; NFSv3 has no authentication worth the name, so bind it to loopback or a private interface (docs/nfs.md); empty: off")
	fs.StringVar(&c.prefix, "nfs-prefix", "/", "depot `path` the NFS export serves as its root; a path outside it answers NFS3ERR_ACCES")
	fs.Var(&c.grants, "nfs-grants", "read-only `grants` (nfs:PREFIX:r, repeatable or comma-separated) deciding what every NFS client sees within --nfs-prefix; names outside them are not shown; default: all of --nfs-prefix")
}

// validate checks the flags before anything is opened: an address, and
// read-only grants within the prefix.
func (c *nfsConfig) validate() error {
	if c.addr == "" {
		return nil
	}
	if _, err := c.listenAddr(); err != nil {
		return err
	}
	prefix, err := depotpath.Clean(c.prefix)
	if err != nil || !strings.HasPrefix(c.prefix, "/") {
		return fmt.Errorf("--nfs-prefix %q: want an absolute depot path such as /projects", c.prefix)
	}
	for _, g := range c.grants.grants {
		if g.Access != grant.Read || !depotpath.Within(g.Prefix, prefix) || (g.Tool != nfsserver.Tool && g.Tool != grant.AnyTool) {
			return fmt.Errorf("--nfs-grants %s: an NFS grant is nfs:PREFIX:r with PREFIX within --nfs-prefix %s (the export is read-only)", g, prefix)
		}
	}
	return nil
}

// listenAddr is where the export listens: an address without a host
// listens on loopback, never on every interface by accident.
func (c *nfsConfig) listenAddr() (string, error) {
	host, port, err := net.SplitHostPort(c.addr)
	if err != nil {
		return "", fmt.Errorf("--nfs %q: want HOST:PORT or :PORT: %w", c.addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// startNFS serves the export when --nfs is given, until the returned stop
// is called; stop closes it and reports how serving ended.
func startNFS(cfg serveConfig, st store.Store, fetcher nfsserver.Fetcher, host *policy.Host, calls audit.Appender, log *slog.Logger) (stop func() error, err error) {
	c := cfg.nfs
	if c.addr == "" {
		return func() error { return nil }, nil
	}
	addr, err := c.listenAddr()
	if err != nil {
		return nil, err
	}
	opts := &nfsserver.Options{Prefix: c.prefix, Host: host, Audit: calls, Logger: log,
		HandleTable: filepath.Join(filepath.Dir(cfg.db), "nfs-handles.db"),
		UID:         uint32(cfg.uid), GID: uint32(cfg.gid)}
	opts.Umask, _ = parseUmask(cfg.umask)
	if c.grants.set {
		opts.Grants = c.grants.grants
	}
	if fetcher != nil {
		opts.Fetcher = fetcher
	}
	s, err := nfsserver.New(st, opts)
	if err != nil {
		return nil, fmt.Errorf("--nfs: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("--nfs: %w", err), s.Close())
	}
	log.Info("serving NFSv3 read-only", "address", ln.Addr().String(), "prefix", s.Prefix(), "grants", c.grants.String())
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	return func() error {
		cerr := s.Close()
		return errors.Join(<-errc, cerr)
	}, nil
}

// nfsStopper is startNFS's stop as a deferrable call that logs.
func nfsStopper(ctx context.Context, stop func() error, log *slog.Logger) func() {
	return func() {
		if err := stop(); err != nil && ctx.Err() == nil {
			log.Error("nfs server", "err", err)
		}
	}
}
