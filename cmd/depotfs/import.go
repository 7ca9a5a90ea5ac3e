package main

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
)

// Import batches: each is one atomic change of at most this many files
// and bytes (a NATS depot splits a change into its server's batches).
const (
	importBatchFiles = 500
	importBatchBytes = 256 << 20
)

func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg directConfig
	var creds clientCreds
	fs := newFlagSet("import", `Usage: depotfs import FILE [flags]

Loads an export written by 'depotfs export' into a depot: every file with its
bytes, mode, mtime, pin and expiry, every placeholder with its declared size
and hash, every explicit directory. Files go in atomic batches (at most 500
files or 256 MiB each); a file whose content and metadata are already there
is skipped, so an import interrupted halfway is finished by running it again.
Files already in the depot and not in the export stay.

It writes the store directly: a bolt --db that no server has open, or a NATS
depot (--store nats://...), whose running servers see the files at once. Or,
with --url, it streams FILE to a running server, bolt or NATS, which imports
it into its own store; with the credentials of 'depotfs status'
(DEPOTFS_TOKEN or --token-file, --cert/--key, --ca), and the caller needs
the backup right to write, a grant naming it: backup:/:w (full grants also
do; a group or * does not). The depot's size limits are not applied: it
takes what the export holds.

Examples:
  depotfs import depot.tar --store nats://n1:4222,n2:4222,n3:4222
  depotfs import depot.tar --db /srv/depot/depot.db
  DEPOTFS_TOKEN=dfs1_... depotfs import depot.tar --url https://depot:7411/mcp --ca ca.crt

Flags:
`)
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	serverURL := fs.String("url", "", "MCP `endpoint` of a running depotfs serve to import through (sent to /import beside it), instead of writing the store with --db or --store")
	cfg.flags(fs)
	creds.flags(fs)
	pos, err := parseFlagsArgs(fs, args, stderr, 1, "FILE")
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
		return usageError{fmt.Errorf("--url and %s (a flag or its DEPOTFS_ variable): import through a running server or into a store directly, not both", strings.Join(direct, " "))}
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	start := time.Now()
	var stats mcpserver.ImportResult
	if *serverURL != "" {
		stats, err = sendImport(ctx, &creds, *serverURL, f)
	} else {
		stats, err = importDirect(ctx, &cfg, f, stderr)
	}
	if err != nil {
		return fmt.Errorf("import %s: %w", pos[0], err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(stats)
	}
	fmt.Fprintf(stdout, "imported %d files (%s) in %d batches, %d placeholders, %d directories; %d files already there, in %v\n",
		stats.Files, humanSize(stats.Bytes), stats.Batches, stats.Placeholders, stats.Dirs, stats.Skipped, time.Since(start).Round(time.Millisecond))
	return nil
}

// importDirect imports the export in f into the store cfg names.
func importDirect(ctx context.Context, cfg *directConfig, f io.Reader, stderr io.Writer) (mcpserver.ImportResult, error) {
	st, closeStore, err := cfg.open(ctx, stderr)
	if err != nil {
		return mcpserver.ImportResult{}, err
	}
	defer closeStore()
	stats, err := importFrom(ctx, st, f)
	if err != nil {
		return stats, fmt.Errorf("%w (%d files in %d batches were imported before it; run it again to finish)", err, stats.Files, stats.Batches)
	}
	return stats, nil
}

// sendImport streams the export in f to the server at mcpURL, which
// imports it into its own store, and returns what it did.
func sendImport(ctx context.Context, creds *clientCreds, mcpURL string, f io.Reader) (mcpserver.ImportResult, error) {
	var stats mcpserver.ImportResult
	resp, u, err := creds.request(ctx, http.MethodPut, mcpURL, mcpserver.ImportPath, f)
	if err != nil {
		return stats, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		return stats, fmt.Errorf("%s: not a depotfs import answer: %w", u, err)
	}
	return stats, nil
}

// importFrom reads an export from r into st.
func importFrom(ctx context.Context, st store.Store, r io.Reader) (mcpserver.ImportResult, error) {
	var stats mcpserver.ImportResult
	tr := tar.NewReader(bufio.NewReaderSize(r, 1<<20))
	member := func(want string) (*tar.Header, error) {
		h, err := tr.Next()
		if err != nil {
			// Not wrapped: io.EOF from next would end a batch as if the
			// export were complete.
			return nil, fmt.Errorf("not a complete depotfs export: %v", err)
		}
		if want != "" && h.Name != want {
			return nil, fmt.Errorf("not a depotfs export: member %q where %s belongs", h.Name, want)
		}
		return h, nil
	}
	if _, err := member(exportHeaderName); err != nil {
		return stats, err
	}
	var h exportHeader
	if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&h); err != nil || h.Format != exportFormat {
		return stats, fmt.Errorf("not a depotfs export of format %d: %v", exportFormat, err)
	}
	if _, err := member(exportManifestName); err != nil {
		return stats, err
	}
	var entries, files []manifestEntry // files: those whose bytes follow, in order
	dec := json.NewDecoder(tr)
	for dec.More() {
		var e manifestEntry
		if err := dec.Decode(&e); err != nil {
			return stats, fmt.Errorf("manifest line %d: %w", len(entries)+1, err)
		}
		if p, err := depotpath.Clean(e.Path); err != nil || p != e.Path || p == depotpath.Root {
			return stats, fmt.Errorf("manifest line %d: path %q is not a clean depot path", len(entries)+1, e.Path)
		}
		if _, _, _, err := e.decoded(); err != nil {
			return stats, fmt.Errorf("manifest line %d: %w", len(entries)+1, err)
		}
		entries = append(entries, e)
		if e.Type == "file" && !e.Placeholder {
			files = append(files, e)
		}
	}
	if len(entries) != h.Entries {
		return stats, fmt.Errorf("the manifest has %d entries, the header says %d", len(entries), h.Entries)
	}
	sw, ok := st.(store.Streamer)
	if !ok {
		return stats, errors.New("this store cannot take streamed files")
	}
	for {
		n, size := 0, int64(0)
		var pending *manifestEntry
		more := true
		_, err := sw.PutStreams(ctx, func() (store.PutRequest, io.Reader, error) {
			for n < importBatchFiles && size < importBatchBytes {
				if len(files) == 0 {
					more = false
					return store.PutRequest{}, nil, io.EOF
				}
				e := files[0]
				files = files[1:]
				th, err := member(exportFilesDir + e.Path)
				if err != nil {
					return store.PutRequest{}, nil, err
				}
				if th.Size != e.Size {
					return store.PutRequest{}, nil, fmt.Errorf("%s: %d bytes in the export, %d in its manifest", e.Path, th.Size, e.Size)
				}
				if same(ctx, st, e) {
					stats.Skipped++
					continue
				}
				mode, mtime, expires, _ := e.decoded()
				n++
				size += e.Size
				pending = &e
				return store.PutRequest{Path: e.Path, SHA256: e.SHA256, Mode: mode, MTime: mtime, Expires: expires, Pinned: e.Pinned,
					Encoding: "raw", Source: "depotfs import", Writer: "depotfs import"}, tr, nil
			}
			return store.PutRequest{}, nil, io.EOF
		})
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("not a complete depotfs export: %w", err)
		}
		if err != nil {
			if pending != nil {
				return stats, fmt.Errorf("batch ending at %s: %w", pending.Path, err)
			}
			return stats, err
		}
		if n > 0 {
			stats.Batches++
			stats.Files += n
			stats.Bytes += size
		}
		if !more {
			break
		}
	}
	// Placeholders, then explicit directories.
	var decl, dirs []store.Declaration
	for _, e := range entries {
		mode, mtime, _, _ := e.decoded()
		switch {
		case e.Type == "dir":
			dirs = append(dirs, store.Declaration{Path: e.Path, Kind: store.KindDir, Mode: mode, MTime: mtime, Size: -1})
			stats.Dirs++
		case e.Placeholder:
			if cur, err := st.Stat(ctx, e.Path); err == nil && !cur.IsDir() && cur.Present {
				continue // the content is there: the placeholder adds nothing
			}
			decl = append(decl, store.Declaration{Path: e.Path, Kind: store.KindFile, Size: e.Size, MTime: mtime, Mode: mode, SHA256: e.SHA256})
			stats.Placeholders++
		}
	}
	for _, d := range [][]store.Declaration{decl, dirs} {
		if len(d) == 0 {
			continue
		}
		if _, err := st.Declare(ctx, store.DeclareRequest{Entries: d, Writer: "depotfs import", Source: "depotfs import"}); err != nil {
			return stats, fmt.Errorf("placeholders and directories: %w", err)
		}
	}
	return stats, nil
}

// same reports whether st already has e exactly: the same content and
// metadata.
func same(ctx context.Context, st store.Store, e manifestEntry) bool {
	cur, err := st.Stat(ctx, e.Path)
	if err != nil || cur.IsDir() || !cur.Present {
		return false
	}
	return entryOf(cur) == e
}
