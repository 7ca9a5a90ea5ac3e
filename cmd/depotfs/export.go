package main

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/depotfs/depotfs/store"
)

// exportAttempts bounds how often export walks a depot that changed while
// it was walked (a NATS depot that servers keep writing to).
const exportAttempts = 3

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg directConfig
	fs := newFlagSet("export", `Usage: depotfs export --to FILE [flags]

Writes the depot's tree as of one revision to FILE, portable between stores:
one tar stream of a manifest (one JSON line per entry: path, sha256, size,
mode, mtime, pinned, expiry; placeholders with their declared size and hash;
explicit directories) and every present file's bytes. 'depotfs import FILE'
loads it into any depot: it is how a depot moves from one host (bolt) to
several (NATS) and back, and how a NATS depot is backed up.

It reads the store directly: a bolt --db that no server has open, or a NATS
depot (--store nats://...) that servers may share; a NATS depot that keeps
changing while it is walked is walked again.

Examples:
  depotfs export --db /srv/depot/depot.db --to depot.tar
  depotfs export --store nats://n1:4222,n2:4222,n3:4222 --to depot.tar

Flags:
`)
	to := fs.String("to", "", "export `file` to write (it must not exist)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	cfg.flags(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *to == "" {
		return usageError{errors.New("--to FILE is required")}
	}
	st, closeStore, err := cfg.open(ctx, stderr, true)
	if err != nil {
		return err
	}
	defer closeStore()
	f, err := os.OpenFile(*to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	start := time.Now()
	h, bytes, err := exportOnce(ctx, st, f)
	for attempt := 1; errors.Is(err, errTreeChanged) && attempt < exportAttempts; attempt++ {
		if _, serr := f.Seek(0, io.SeekStart); serr != nil || f.Truncate(0) != nil {
			break
		}
		h, bytes, err = exportOnce(ctx, st, f)
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
		return json.NewEncoder(stdout).Encode(map[string]any{"file": *to, "revision": h.Revision, "entries": h.Entries, "bytes": bytes})
	}
	fmt.Fprintf(stdout, "exported revision %d: %d entries, %s of content, to %s in %v\n", h.Revision, h.Entries, humanSize(bytes), *to, time.Since(start).Round(time.Millisecond))
	return nil
}

// errTreeChanged reports a depot that changed while export walked it.
var errTreeChanged = errors.New("the depot changed while it was exported")

// exportOnce walks st and writes the export to w: the manifest first, so
// an import knows every entry before the bytes arrive, then the files. It
// fails with errTreeChanged when the revision moved meanwhile.
func exportOnce(ctx context.Context, st store.Store, w io.Writer) (exportHeader, int64, error) {
	rev, err := st.Revision(ctx)
	if err != nil {
		return exportHeader{}, 0, err
	}
	var entries []manifestEntry
	err = walkTree(ctx, st, "/", func(e store.Entry) error {
		if !e.IsDir() || e.Explicit {
			entries = append(entries, entryOf(e))
		}
		return nil
	})
	if err != nil {
		return exportHeader{}, 0, err
	}
	h := exportHeader{Format: exportFormat, Revision: rev, Created: time.Now().UTC(), Entries: len(entries)}
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
		return h, 0, err
	}
	var manifest []byte
	for _, e := range entries {
		line, _ := json.Marshal(e)
		manifest = append(append(manifest, line...), '\n')
	}
	if err := add(exportManifestName, int64(len(manifest)), func(w io.Writer) error { _, err := w.Write(manifest); return err }); err != nil {
		return h, 0, err
	}
	var total int64
	for _, e := range entries {
		if e.Type != "file" || e.Placeholder {
			continue
		}
		c, err := st.Open(ctx, e.Path)
		if errors.Is(err, store.ErrNotExist) || errors.Is(err, store.ErrNotPresent) {
			return h, 0, errTreeChanged
		}
		if err != nil {
			return h, 0, err
		}
		if c.SHA256() != e.SHA256 {
			c.Close()
			return h, 0, errTreeChanged
		}
		err = add(exportFilesDir+e.Path, c.Size(), func(w io.Writer) error {
			_, err := io.Copy(w, io.NewSectionReader(c, 0, c.Size()))
			return err
		})
		c.Close()
		if err != nil {
			return h, 0, fmt.Errorf("%s: %w", e.Path, err)
		}
		total += e.Size
	}
	if err := tw.Close(); err != nil {
		return h, 0, err
	}
	if err := bw.Flush(); err != nil {
		return h, 0, err
	}
	if now, err := st.Revision(ctx); err != nil {
		return h, 0, err
	} else if now != rev {
		return h, 0, errTreeChanged
	}
	return h, total, nil
}
