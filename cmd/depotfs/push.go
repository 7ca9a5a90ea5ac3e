package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"
)

// pushed is the outcome of one PATH of "depotfs push".
type pushed struct {
	Local string `json:"local"`
	// Path is the depot path the PATH is stored at: the file, or the
	// directory the tree is unpacked into.
	Path        string `json:"path,omitempty"`
	Files       int64  `json:"files"`
	Directories int64  `json:"directories,omitempty"`
	Bytes       int64  `json:"bytes"`
	// Reply is a file's PUT reply data (guide_cache_file's); Replies are a
	// tree's, one per tar stream it was sent as (guide_cache_files').
	Reply   json.RawMessage   `json:"reply,omitempty"`
	Replies []json.RawMessage `json:"replies,omitempty"`
	Error   string            `json:"error,omitempty"`
}

func runPush(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var creds clientCreds
	fs := newFlagSet("push", pushUsage)
	mcpURL := fs.String("url", "http://127.0.0.1:7411/mcp", "MCP `endpoint` of the running depotfs serve; credentials are sent to its scheme, host and port only")
	to := fs.String("to", "", "depot `directory` to push into, e.g. /workspace (required): each PATH is stored at /dest/NAME, NAME the last component of its absolute path")
	asJSON := fs.Bool("json", false, "print one JSON object per PATH (the server's replies included) instead of a summary")
	creds.flags(fs)
	paths, err := parseFlagsArgs(fs, args, stderr, -1, "")
	if err != nil {
		return err
	}
	switch {
	case *to == "" || !strings.HasPrefix(*to, "/"):
		return usageError{errors.New("--to must name an absolute depot directory, e.g. --to /workspace")}
	case len(paths) == 0:
		return usageError{errors.New("name at least one PATH to push")}
	}
	origin, err := url.Parse(*mcpURL)
	if err != nil || (origin.Scheme != "http" && origin.Scheme != "https") || origin.Host == "" {
		return usageError{fmt.Errorf("--url %q: not an http or https URL", *mcpURL)}
	}
	if err := creds.load(); err != nil {
		return err
	}
	plan, err := planPush(paths, path.Clean(*to), stderr)
	if err != nil {
		return err
	}
	defer plan.close()
	// One client for the whole push: every PUT and the MCP session share
	// its connections, however many PATHs there are.
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig: creds.tls, Proxy: http.ProxyFromEnvironment,
		MaxIdleConnsPerHost: 2,
	}}
	defer hc.CloseIdleConnections()
	c, err := connect(ctx, *mcpURL, &creds, "depotfs-push", hc)
	if err != nil {
		return err
	}
	defer c.Close()

	prog := newProgress(stderr, plan.files, plan.bytes, !*asJSON && isTerminal(stderr))
	defer prog.stop()
	p := &pusher{c: c, hc: hc, origin: origin, token: creds.token, prog: prog, batchEntries: pushBatchEntries, batchBytes: pushBatchBytes}
	var results []pushed
	failed := 0
	for _, item := range plan.items {
		r := p.pushOne(ctx, item)
		if r.Error != "" {
			failed++
		}
		results = append(results, r)
	}
	prog.stop()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	} else {
		for _, r := range results {
			if r.Error != "" {
				fmt.Fprintf(stderr, "depotfs push: %s: %s\n", r.Local, r.Error)
				continue
			}
			what := plural(r.Files, "file", "files")
			if r.Directories > 0 {
				what += ", " + plural(r.Directories, "directory", "directories")
			}
			fmt.Fprintf(stdout, "%s -> %s (%s, %s)\n", r.Local, r.Path, what, humanSize(r.Bytes))
		}
		elapsed := prog.elapsed()
		fmt.Fprintf(stdout, "pushed %d of %d paths: %d files, %s in %s (%s/s)\n",
			len(results)-failed, len(results), prog.files.Load(), humanSize(prog.bytes.Load()),
			elapsed.Round(time.Millisecond), humanSize(int64(float64(prog.bytes.Load())/max(elapsed.Seconds(), 1e-3))))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d paths were not pushed", failed, len(results))
	}
	return nil
}

// pushUsage is the head of "depotfs push --help"; the flags follow.
const pushUsage = `Usage: depotfs push [flags] --to /dest PATH...

Sends files and directory trees from disk into a running "depotfs serve",
the fastest way it takes them: for each PATH, guide_begin_upload over MCP,
then an HTTP PUT of the raw bytes (a directory as tar streams, each
unpacked by the server into one atomic change). Nothing is base64-encoded
or held in memory.

Where it goes: each PATH is stored at /dest/NAME, NAME being the last
component of the PATH's absolute path: "push --to /w ./src" stores
/w/src/..., "push --to /w ." run in /home/me/proj stores /w/proj/... The
summary prints "PATH -> DEPOT PATH" for each.

What it sends: a file with its mode and mtime; a directory with every
directory below it (empty ones too; an empty directory PATH is made empty)
and every regular file, with their modes and mtimes. Symbolic links and special files in a tree are skipped
with a warning. A PATH named on the command line is followed if it is a
link; nothing below it ever is: files are opened relative to the opened
tree with O_NOFOLLOW, and a file or directory replaced by a link, or a file
by something else, since the plan is refused.

A file that changes while it is sent (fstat after reading it shows another
size, mtime or ctime than before) is refused: the PUT is cut short, so the
server stores nothing of it (nothing of its tar stream, for a tree), and
the exit status is 1. Push it again when nothing writes it.

A tree of more than 1000 entries or 256 MiB is sent as several tar
streams, each an atomic change; a stream the server refuses as over a
limit is sent again as two halves. If one fails, the streams before it
stay stored and the error says how many files they held.

Under the server's byte rate limit (serve --rate-bytes), a refused PUT is
sent again after the wait the server asks for (at most 10 minutes at a
time, 10 times for one PUT), and the progress line says so. A tar stream
an older server could never pass (larger than its --rate-byte-burst) is
sent again as two halves.

Credentials are those of "depotfs status": DEPOTFS_TOKEN or --token-file,
--cert and --key, --ca for an https --url. They are sent only to the
scheme, host and port of --url: an upload URL the server hands out
elsewhere (a server behind a TLS-terminating proxy that was not started
with --public-url) is refused before anything is sent.

On a terminal it shows a progress bar (bytes, files, rate, time left);
otherwise it prints a line per PATH and a summary, or with --json one JSON
object per PATH. The exit status is 1 if any PATH was not pushed.

Examples:
  depotfs push --to /datasets big.parquet
  depotfs push --to /workspace ./src ./README.md
  DEPOTFS_TOKEN=dfs1_... depotfs push --url https://depot.example.org:7411/mcp --ca ca.crt --to /ci build/

Flags:
`

// plural is n with the noun that fits it.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
