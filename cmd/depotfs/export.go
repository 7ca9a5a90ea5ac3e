package main

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
)

// exportSnapshotTTL is how long the snapshot an export holds its revision
// with lives if the export never releases it (a killed process): an
// export of a running depot takes minutes, and the store expires the
// snapshot after, freeing what only it held.
const exportSnapshotTTL = 24 * time.Hour

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg directConfig
	var creds clientCreds
	fs := newFlagSet("export", `Usage: depotfs export --to FILE [flags]

Writes the depot's tree as of one revision to FILE, portable between stores:
one tar stream of a manifest (one JSON line per entry: path, sha256, size,
mode, mtime, pinned, expiry; placeholders with their declared size and hash;
explicit directories) and every present file's bytes. 'depotfs import FILE'
loads it into any depot: it is how a depot moves from one host (bolt) to
several (NATS) and back.

With --url it asks a running server, bolt or NATS, with the credentials of
'depotfs status' (DEPOTFS_TOKEN or --token-file, --cert/--key, --ca); the
caller needs the backup right, a grant naming it: backup:/:r (full grants
also do). Without it, it reads the store directly: a bolt --db that no
server has open (read only: the file is never created, upgraded or
changed), or a NATS depot (--store nats://...) that servers may be writing.
A depot that may be written meanwhile is read from a temporary snapshot
(named export-..., released at the end, expiring after a day if the export
is killed): the export is the tree at the snapshot's revision, whatever is
written while it runs.

Examples:
  depotfs export --db /srv/depot/depot.db --to depot.tar
  depotfs export --store nats://n1:4222,n2:4222,n3:4222 --to depot.tar
  DEPOTFS_TOKEN=dfs1_... depotfs export --url https://depot:7411/mcp --ca ca.crt --to depot.tar

Flags:
`)
	to := fs.String("to", "", "export `file` to write (it must not exist)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	serverURL := fs.String("url", "", "MCP `endpoint` of a running depotfs serve to export (fetched from /export beside it), instead of reading the store with --db or --store")
	cfg.flags(fs)
	creds.flags(fs)
	var rcpt recipientsConfig
	rcpt.flags(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *to == "" {
		return usageError{errors.New("--to FILE is required")}
	}
	recipients, err := rcpt.load()
	if err != nil {
		return err
	}
	var direct []string
	fs.Visit(func(f *flag.Flag) {
		if *serverURL != "" && (f.Name == "db" || f.Name == "store") {
			direct = append(direct, "--"+f.Name)
		}
	})
	if len(direct) > 0 {
		return usageError{fmt.Errorf("--url and %s (a flag or its DEPOTFS_ variable): export a running server or a store directly, not both", strings.Join(direct, " "))}
	}
	var st store.Store
	if *serverURL == "" {
		var closeStore func() error
		if st, closeStore, err = cfg.open(ctx, stderr, true); err != nil {
			return err
		}
		defer closeStore()
	}
	f, err := os.OpenFile(*to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	start := time.Now()
	var res exportResult
	out, err := encrypt(f, recipients)
	if err == nil && *serverURL != "" {
		res, err = fetchExport(ctx, &creds, *serverURL, out)
	} else if err == nil {
		// A bolt database opened read only has no other writer: its live
		// tree is the tree at one revision.
		res, err = exportStore(ctx, st, cfg.store.url == "bolt", out, func(uint64) {})
	}
	if err == nil {
		err = out.Close()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(*to)
		return fmt.Errorf("export: %w", err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"file": *to, "revision": res.Revision, "entries": res.Entries, "bytes": res.Bytes})
	}
	fmt.Fprintf(stdout, "exported revision %d: %d entries, %s of content, to %s in %v\n", res.Revision, res.Entries, humanSize(res.Bytes), *to, time.Since(start).Round(time.Millisecond))
	return nil
}

// exportResult is what an export wrote: the revision, the entries of its
// manifest and the bytes of its files' content.
type exportResult struct {
	Revision uint64
	Entries  int
	Bytes    int64
}

// treeAt reads a store's tree as of one revision: through a snapshot's
// revision (at true), or live, for a store nothing else writes.
type treeAt struct {
	st  store.Store
	rev uint64
	at  bool
}

func (t treeAt) readDir(ctx context.Context, dir string) ([]store.Entry, error) {
	if t.at {
		return t.st.ReadDirAt(ctx, dir, t.rev)
	}
	return t.st.ReadDir(ctx, dir)
}

func (t treeAt) open(ctx context.Context, p string) (store.Content, error) {
	if t.at {
		return t.st.OpenAt(ctx, p, t.rev)
	}
	return t.st.Open(ctx, p)
}

// walk calls visit for every entry below dir, each directory before what
// it holds.
func (t treeAt) walk(ctx context.Context, dir string, visit func(store.Entry) error) error {
	list, err := t.readDir(ctx, dir)
	if err != nil {
		return err
	}
	for _, e := range list {
		if err := visit(e); err != nil {
			return err
		}
		if e.IsDir() {
			if err := t.walk(ctx, e.Path, visit); err != nil {
				return err
			}
		}
	}
	return nil
}

// holdRevision creates a temporary snapshot of the whole tree of st and
// returns the tree at its revision and the function that releases it.
// The release runs even when ctx is done (an export cut off).
func holdRevision(ctx context.Context, st store.Store) (treeAt, func() error, error) {
	var b [4]byte
	rand.Read(b[:])
	name := "export-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	snap, err := st.CreateSnapshot(ctx, store.SnapshotRequest{Name: name, Prefix: "/", Writer: "depotfs export", Expires: time.Now().Add(exportSnapshotTTL)})
	if err != nil {
		return treeAt{}, nil, fmt.Errorf("holding the revision to export (snapshot %s): %w", name, err)
	}
	release := func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := st.DeleteSnapshot(ctx, name); err != nil {
			return fmt.Errorf("releasing the export's snapshot %s (it expires by itself at %s): %w", name, snap.Expires.Format(time.RFC3339), err)
		}
		return nil
	}
	return treeAt{st: st, rev: snap.Revision, at: true}, release, nil
}

// exportStore writes the export of st to w: of its live tree when
// nothing else writes it (live), else of the tree at the revision of a
// temporary snapshot, released when done. started is called with the
// revision before the first byte.
func exportStore(ctx context.Context, st store.Store, live bool, w io.Writer, started func(rev uint64)) (res exportResult, err error) {
	var t treeAt
	if live {
		rev, err := st.Revision(ctx)
		if err != nil {
			return res, err
		}
		t = treeAt{st: st, rev: rev}
	} else {
		var release func() error
		if t, release, err = holdRevision(ctx, st); err != nil {
			return res, err
		}
		defer func() { err = errors.Join(err, release()) }()
	}
	started(t.rev)
	return writeExport(ctx, t, w)
}

// writeExport walks t and writes the export to w: the manifest first, so
// an import knows every entry before the bytes arrive, then the files.
func writeExport(ctx context.Context, t treeAt, w io.Writer) (exportResult, error) {
	var entries []manifestEntry
	err := t.walk(ctx, "/", func(e store.Entry) error {
		if !e.IsDir() || e.Explicit {
			entries = append(entries, entryOf(e))
		}
		return nil
	})
	if err != nil {
		return exportResult{}, err
	}
	h := exportHeader{Format: exportFormat, Revision: t.rev, Created: time.Now().UTC(), Entries: len(entries)}
	res := exportResult{Revision: t.rev, Entries: len(entries)}
	bw := bufio.NewWriterSize(w, 1<<20)
	tw := tar.NewWriter(bw)
	add := func(name string, size int64, body func(io.Writer) error) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Size: size, Mode: 0o600, ModTime: h.Created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		return body(tw)
	}
	hb, _ := json.Marshal(h)
	if err := add(exportHeaderName, int64(len(hb)), func(w io.Writer) error { _, err := w.Write(hb); return err }); err != nil {
		return res, err
	}
	var manifest []byte
	for _, e := range entries {
		line, _ := json.Marshal(e)
		manifest = append(append(manifest, line...), '\n')
	}
	if err := add(exportManifestName, int64(len(manifest)), func(w io.Writer) error { _, err := w.Write(manifest); return err }); err != nil {
		return res, err
	}
	// Reads of a chunk's size: a store read (a read transaction on bolt)
	// per 32 KiB, io.Copy's own buffer, made the export 3x slower.
	buf := make([]byte, 1<<20)
	for _, e := range entries {
		if e.Type != "file" || e.Placeholder {
			continue
		}
		c, err := t.open(ctx, e.Path)
		if err != nil {
			return res, fmt.Errorf("%s at revision %d: %w", e.Path, t.rev, err)
		}
		if c.SHA256() != e.SHA256 {
			c.Close()
			return res, fmt.Errorf("%s at revision %d: content %s, its entry says %s", e.Path, t.rev, c.SHA256(), e.SHA256)
		}
		err = add(exportFilesDir+e.Path, c.Size(), func(w io.Writer) error {
			_, err := io.CopyBuffer(w, io.NewSectionReader(c, 0, c.Size()), buf)
			return err
		})
		c.Close()
		if err != nil {
			return res, fmt.Errorf("%s: %w", e.Path, err)
		}
		res.Bytes += e.Size
	}
	if err := tw.Close(); err != nil {
		return res, err
	}
	return res, bw.Flush()
}

// fetchExport streams the export of the running server at mcpURL into w.
// A body cut off (the server failed or cut a slow reader) lacks the tar's
// end and fails here.
func fetchExport(ctx context.Context, creds *clientCreds, mcpURL string, w io.Writer) (exportResult, error) {
	resp, u, err := creds.request(ctx, "GET", mcpURL, mcpserver.ExportPath, nil)
	if err != nil {
		return exportResult{}, err
	}
	defer resp.Body.Close()
	rev, err := strconv.ParseUint(resp.Header.Get(mcpserver.ExportRevisionHeader), 10, 64)
	if err != nil {
		return exportResult{}, fmt.Errorf("%s: no %s header: not a depotfs export endpoint", u, mcpserver.ExportRevisionHeader)
	}
	res := exportResult{Revision: rev}
	// Read the stream as an import would, to count it and to see its end;
	// every byte read from the body is written to w once, in large writes.
	tr := tar.NewReader(bufio.NewReaderSize(io.TeeReader(resp.Body, w), 1<<20))
	for {
		th, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, fmt.Errorf("%s: the export was cut off: %w", u, err)
		}
		if th.Name == exportHeaderName {
			var h exportHeader
			if err := json.NewDecoder(tr).Decode(&h); err != nil {
				return res, fmt.Errorf("%s: export header: %w", u, err)
			}
			res.Entries = h.Entries
		} else if strings.HasPrefix(th.Name, exportFilesDir+"/") {
			res.Bytes += th.Size
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return res, fmt.Errorf("%s: the export was cut off: %w", u, err)
		}
	}
	// The tar's end blocks, and anything after them, reach w too.
	if _, err := io.Copy(w, resp.Body); err != nil {
		return res, fmt.Errorf("%s: the export was cut off: %w", u, err)
	}
	return res, nil
}
