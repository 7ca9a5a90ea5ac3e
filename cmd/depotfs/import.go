package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
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
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
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

A NATS depot that the import creates (a new --nats-prefix, or a new
cluster: how a lost depot is loaded from its backup) hands out revisions
above every revision the exported depot can have handed out: above the
export's revision plus a million a second since it was taken, and above
--min-revision, as restore does for bolt. A stale if_revision an agent
holds then conflicts instead of matching another version. An existing
depot keeps its own revisions (JetStream cannot raise them); import says
so when they are below that floor.

Paths the server's policy refuses are not imported: through --url, the
running server checks every path of the export against its own --allow,
--deny and the caller's grants; directly, import applies --allow and
--deny given to it, on the command line, as DEPOTFS_ALLOW and
DEPOTFS_DENY, or read from serve's --env-file. Either way the whole
manifest is checked before anything is written: an export with one
refused path imports nothing, and the error names the paths.

Examples:
  depotfs import depot.tar --store nats://n1:4222,n2:4222,n3:4222
  depotfs import depot.tar --db /srv/depot/depot.db
  DEPOTFS_TOKEN=dfs1_... depotfs import depot.tar --url https://depot:7411/mcp --ca ca.crt

Flags:
`)
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	minRev := fs.Uint64("min-revision", 0, "a NATS depot the import creates hands out revisions above this `revision` too (the highest one agents may still hold); see above")
	serverURL := fs.String("url", "", "MCP `endpoint` of a running depotfs serve to import through (sent to /import beside it), instead of writing the store with --db or --store")
	var pol importPolicy
	pol.flags(fs)
	cfg.flags(fs)
	creds.flags(fs)
	var ids identitiesConfig
	ids.flags(fs)
	pos, err := parseFlagsArgs(fs, args, stderr, 1, "FILE")
	if err != nil {
		return err
	}
	var direct []string
	fs.Visit(func(f *flag.Flag) {
		if *serverURL != "" && (f.Name == "db" || f.Name == "store" || f.Name == "allow" || f.Name == "deny" || f.Name == "env-file") {
			direct = append(direct, "--"+f.Name)
		}
	})
	if len(direct) > 0 {
		return usageError{fmt.Errorf("--url and %s (a flag or its DEPOTFS_ variable): import through a running server (which applies its own policy) or into a store directly, not both", strings.Join(direct, " "))}
	}
	may, err := pol.resolve()
	if err != nil {
		return usageError{err}
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	// An export encrypted to age recipients is decrypted here, so a
	// server importing it through --url receives the tar it expects.
	r, err := ids.open(f)
	if err != nil {
		return fmt.Errorf("import %s: %w", pos[0], err)
	}
	start := time.Now()
	var stats mcpserver.ImportResult
	if *serverURL != "" {
		stats, err = sendImport(ctx, &creds, *serverURL, r)
	} else {
		if cfg.store.url != "bolt" {
			var h exportHeader
			if h, r, err = peekExportHeader(r); err != nil {
				return fmt.Errorf("import %s: %w", pos[0], err)
			}
			cfg.firstRevision = max(*minRev, h.Revision+revisionMargin(h.Created, time.Now()))
		}
		stats, err = importDirect(ctx, &cfg, r, may, stderr)
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

// importPolicy is the host policy a direct import applies: serve's
// --allow and --deny, from the flags, the environment or serve's
// --env-file.
type importPolicy struct {
	allow, deny []string
	envFile     string
	set         map[string]bool // allow and deny given as flags or variables
}

func (p *importPolicy) flags(fs *flag.FlagSet) {
	p.set = map[string]bool{}
	fs.Func("allow", "with --db or --store: import only below this depot path `prefix`, as serve --allow (repeatable; default /)", p.note("allow", &p.allow))
	fs.Func("deny", "with --db or --store: refuse an export with a path below this depot path `prefix`, as serve --deny (repeatable)", p.note("deny", &p.deny))
	fs.StringVar(&p.envFile, "env-file", "", "with --db or --store: read DEPOTFS_ALLOW and DEPOTFS_DENY from serve's env `file` (its other settings are serve's and ignored); flags and variables win over it")
}

// note returns a flag function appending to list and noting name as set.
func (p *importPolicy) note(name string, list *[]string) func(string) error {
	return func(v string) error {
		p.set[name] = true
		*list = append(*list, v)
		return nil
	}
}

// resolve reads the env file and returns the check of a path against the
// policy: nil, or a *policy.Denied.
func (p *importPolicy) resolve() (func(string) error, error) {
	if p.envFile != "" {
		vals, err := readEnvFile(p.envFile)
		if err != nil {
			return nil, err
		}
		for name, list := range map[string]*[]string{"allow": &p.allow, "deny": &p.deny} {
			if v, ok := vals[name]; ok && !p.set[name] {
				*list = append(*list, v)
			}
		}
	}
	host, err := policy.NewHost(p.allow, p.deny)
	if err != nil {
		return nil, err
	}
	set := host.For(identity.Identity{Full: true})
	return func(path string) error {
		_, err := set.Check(mcpserver.ImportTool, mcpserver.ImportTool, path, grant.Write)
		return err
	}, nil
}

// importDirect imports the export in f into the store cfg names, refusing
// it if may refuses one of its paths.
func importDirect(ctx context.Context, cfg *directConfig, f io.Reader, may func(string) error, stderr io.Writer) (mcpserver.ImportResult, error) {
	st, closeStore, err := cfg.open(ctx, stderr, false)
	if err != nil {
		return mcpserver.ImportResult{}, err
	}
	defer closeStore()
	stats, err := importFrom(ctx, st, f, may)
	if errors.Is(err, policy.ErrDenied) {
		return stats, err
	}
	if rev, rerr := st.Revision(ctx); cfg.firstRevision > 0 && rerr == nil && rev <= cfg.firstRevision {
		fmt.Fprintf(stderr, "import: warning: the depot existed before this import and keeps its own revisions (now %d), below %d: they may repeat revisions the exported depot handed out, so an if_revision an agent still holds could match another version; import into a new depot (a new --nats-prefix) to continue above them\n", rev, cfg.firstRevision)
	}
	if err != nil {
		return stats, fmt.Errorf("%w (%d files in %d batches were imported before it; run it again to finish)", err, stats.Files, stats.Batches)
	}
	return stats, nil
}

// peekExportHeader reads the header of the export r streams, and
// returns it with a reader of the whole stream again.
func peekExportHeader(r io.Reader) (exportHeader, io.Reader, error) {
	var h exportHeader
	var seen bytes.Buffer
	tr := tar.NewReader(io.TeeReader(r, &seen))
	th, err := tr.Next()
	if err != nil || th.Name != exportHeaderName {
		return h, nil, fmt.Errorf("not a depotfs export: no %s at its start (%v)", exportHeaderName, err)
	}
	if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&h); err != nil || h.Format != exportFormat {
		return h, nil, fmt.Errorf("not a depotfs export of format %d: %v", exportFormat, err)
	}
	return h, io.MultiReader(&seen, r), nil
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

// importFrom reads an export from r into st. Once it has read the
// manifest, and before it writes anything, it checks every path with may
// (nil: all may be written) and refuses the whole export if may refuses
// one: the error wraps the first *policy.Denied and names the paths.
func importFrom(ctx context.Context, st store.Store, r io.Reader, may func(string) error) (mcpserver.ImportResult, error) {
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
	if err := checkPaths(entries, may); err != nil {
		return stats, err
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

// checkPaths refuses entries if may refuses one of their paths, naming
// the first few and wrapping the first refusal.
func checkPaths(entries []manifestEntry, may func(string) error) error {
	if may == nil {
		return nil
	}
	var first error
	var refused []string
	for _, e := range entries {
		if err := may(e.Path); err != nil {
			first = cmp.Or(first, err)
			refused = append(refused, e.Path)
		}
	}
	if first == nil {
		return nil
	}
	const named = 5
	list := strings.Join(refused[:min(len(refused), named)], ", ")
	if len(refused) > named {
		list += fmt.Sprintf(" and %d more", len(refused)-named)
	}
	return fmt.Errorf("%w; the export holds %d of %d paths the policy refuses (%s), so nothing was imported (to import them, change --allow or --deny)",
		first, len(refused), len(entries), list)
}
