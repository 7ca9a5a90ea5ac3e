package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	natsstore "github.com/depotfs/depotfs/store/nats"
)

// The members of an export: a header, the manifest (one JSON line per
// entry, in walk order), then each present file's bytes under files/, in
// manifest order. Any tar tool lists and unpacks it.
const (
	exportHeaderName   = "depotfs-export.json"
	exportManifestName = "manifest.jsonl"
	exportFilesDir     = "files"
	exportFormat       = 1
)

// exportHeader is an export's first member.
type exportHeader struct {
	Format   int       `json:"format"`
	Revision uint64    `json:"revision"` // the revision the tree is as of
	Created  time.Time `json:"created"`
	Entries  int       `json:"entries"`
}

// manifestEntry is one line of the manifest: a file (present, or a
// placeholder with its declared size and hash) or an explicit directory.
type manifestEntry struct {
	Path        string `json:"path"`
	Type        string `json:"type"` // "file" or "dir"
	Placeholder bool   `json:"placeholder,omitempty"`
	SHA256      string `json:"sha256,omitempty"` // content hash; for a placeholder, the declared one
	Size        int64  `json:"size"`             // for a placeholder, the declared size (-1: unknown)
	Mode        string `json:"mode,omitempty"`   // octal permission bits; "" for the mount's default
	MTime       string `json:"mtime,omitempty"`  // RFC 3339 with nanoseconds; files only
	Pinned      bool   `json:"pinned,omitempty"`
	Expires     string `json:"expires,omitempty"` // RFC 3339; "" never
}

// entryOf is the manifest line of e.
func entryOf(e store.Entry) manifestEntry {
	m := manifestEntry{Path: e.Path, Type: "file", Size: e.Size, SHA256: e.SHA256, Pinned: e.Pinned}
	if e.IsDir() {
		m = manifestEntry{Path: e.Path, Type: "dir"}
	} else if !e.Present {
		m.Placeholder, m.SHA256 = true, e.DeclaredSHA256
	}
	if e.Mode != 0 {
		m.Mode = fmt.Sprintf("%04o", uint32(e.Mode.Perm()))
	}
	// A directory's mtime is the time of the last change within it (see
	// store.Entry.MTime): an import makes its own, so it is not exported.
	if !e.MTime.IsZero() && !e.IsDir() {
		m.MTime = e.MTime.UTC().Format(time.RFC3339Nano)
	}
	if !e.Expires.IsZero() {
		m.Expires = e.Expires.UTC().Format(time.RFC3339Nano)
	}
	return m
}

// decoded returns the mode, mtime and expiry of m.
func (m manifestEntry) decoded() (mode fs.FileMode, mtime, expires time.Time, err error) {
	if m.Mode != "" {
		n, perr := strconv.ParseUint(m.Mode, 8, 32)
		if perr != nil || n > 0o777 {
			return 0, mtime, expires, fmt.Errorf("%s: mode %q: want octal permission bits", m.Path, m.Mode)
		}
		mode = fs.FileMode(n)
	}
	if m.MTime != "" {
		if mtime, err = time.Parse(time.RFC3339Nano, m.MTime); err != nil {
			return 0, mtime, expires, fmt.Errorf("%s: mtime: %w", m.Path, err)
		}
	}
	if m.Expires != "" {
		if expires, err = time.Parse(time.RFC3339Nano, m.Expires); err != nil {
			return 0, mtime, expires, fmt.Errorf("%s: expires: %w", m.Path, err)
		}
	}
	return mode, mtime, expires, nil
}

// walkTree calls visit for every entry below dir of st, each directory
// before what it holds.
func walkTree(ctx context.Context, st store.Store, dir string, visit func(store.Entry) error) error {
	list, err := st.ReadDir(ctx, dir)
	if err != nil {
		return err
	}
	for _, e := range list {
		if err := visit(e); err != nil {
			return err
		}
		if e.IsDir() {
			if err := walkTree(ctx, st, e.Path, visit); err != nil {
				return err
			}
		}
	}
	return nil
}

// directConfig is how export and import reach a store directly: a bolt
// database no server has open (--db), or a NATS depot (--store nats://…),
// which running servers share.
type directConfig struct {
	db    string
	store storeConfig
	key   keyConfig
	// firstRevision is a NATS depot's Options.FirstRevision, should open
	// create it (import).
	firstRevision uint64
}

func (c *directConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.db, "db", defaultDB(), "bbolt database `file` (with --store bolt); serve must not be running on it")
	c.store.flags(fs)
	c.key.flags(fs)
}

// open opens the store, logging warnings to stderr. A NATS depot is opened
// as a tool, not a host: it records and checks no shared settings, and
// enforces no size limit. With readOnly the depot must exist and is
// neither created, upgraded nor changed: a bolt database is opened read
// only, and a NATS cluster without the depot is refused rather than given
// an empty one.
func (c *directConfig) open(ctx context.Context, stderr io.Writer, readOnly bool) (store.Store, func() error, error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := c.store.validate(); err != nil {
		return nil, nil, usageError{err}
	}
	kek, err := c.key.load()
	if err != nil {
		return nil, nil, err
	}
	if c.store.url == "bolt" {
		if !readOnly {
			if err := os.MkdirAll(filepath.Dir(c.db), 0o700); err != nil {
				return nil, nil, err
			}
		}
		b, err := bolt.Open(c.db, &bolt.Options{Logger: log, ReadOnly: readOnly, Key: kek})
		if err != nil {
			if _, ok := errors.AsType[*bolt.LockedError](err); ok {
				return nil, nil, fmt.Errorf("%w\na server is running on it: stop it first, or use depotfs backup", err)
			}
			return nil, nil, err
		}
		return b, b.Close, nil
	}
	create := natsstore.CreateFirst
	if readOnly {
		create = natsstore.CreateNever
	}
	s, closeNATS, err := waitForDepot(ctx, c.store, nil, &natsstore.Options{Prefix: c.store.prefix, Logger: log, MaxBatch: c.store.maxBatch, Create: create, Key: kek, FirstRevision: c.firstRevision}, log)
	if err != nil {
		return nil, nil, err
	}
	return s, closeNATS, nil
}
