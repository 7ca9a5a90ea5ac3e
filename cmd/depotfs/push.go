package main

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver"
)

// pushConfig is what "depotfs push" is told by flags and environment.
type pushConfig struct {
	url   string
	to    string
	json  bool
	creds clientCreds
}

// pushed is the outcome of one PATH of "depotfs push".
type pushed struct {
	Local string `json:"local"`
	Path  string `json:"path,omitempty"` // the depot path (file) or directory (tree)
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	// Reply is the PUT's envelope data: guide_cache_file's for a file,
	// guide_cache_files' for a tree.
	Reply json.RawMessage `json:"reply,omitempty"`
	Error string          `json:"error,omitempty"`
}

func runPush(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg pushConfig
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	fs.StringVar(&cfg.url, "url", "http://127.0.0.1:7411/mcp", "MCP `endpoint` of the running depotfs serve")
	fs.StringVar(&cfg.to, "to", "", "depot `directory` to push into, e.g. /workspace (required): a file PATH becomes /dest/<its name>, a directory PATH the tree /dest/<its name>/...")
	fs.BoolVar(&cfg.json, "json", false, "print one JSON object per PATH (the server's reply included) instead of a summary")
	cfg.creds.flags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: depotfs push [flags] --to /dest PATH...

Sends files and directory trees from disk into a running "depotfs serve",
the fastest way it takes them: for each PATH, guide_begin_upload over MCP,
then one HTTP PUT of the raw bytes (a directory as one tar stream, unpacked
by the server into one atomic change). Nothing is base64-encoded or held in
memory. Only regular files are sent; symbolic links and special files in a
tree are skipped with a warning.

On a terminal it shows a progress bar (bytes, files, rate, time left);
otherwise it prints one summary line, or with --json one JSON object per
PATH. The exit status is 1 if the server refused any PATH.

Credentials are those of "depotfs status": DEPOTFS_TOKEN or --token-file,
--cert and --key, --ca for an https --url.

Examples:
  depotfs push --to /datasets big.parquet
  depotfs push --to /workspace ./src ./README.md
  DEPOTFS_TOKEN=dfs1_... depotfs push --url https://depot.example.org:7411/mcp --ca ca.crt --to /ci build/

Flags:
`)
		fs.PrintDefaults()
	}
	paths, err := parseFlagsArgs(fs, args, stderr, -1, "")
	if err != nil {
		return err
	}
	switch {
	case cfg.to == "" || !strings.HasPrefix(cfg.to, "/"):
		return usageError{errors.New("--to must name an absolute depot directory, e.g. --to /workspace")}
	case len(paths) == 0:
		return usageError{errors.New("name at least one PATH to push")}
	}
	if err := cfg.creds.load(); err != nil {
		return err
	}
	plan, err := planPush(paths, stderr)
	if err != nil {
		return err
	}
	c, err := connectPush(ctx, cfg.url, &cfg.creds)
	if err != nil {
		return err
	}
	defer c.Close()

	prog := newProgress(stderr, plan.files, plan.bytes, !cfg.json && isTerminal(stderr))
	defer prog.stop()
	var results []pushed
	failed := 0
	for _, item := range plan.items {
		r := pushOne(ctx, c, &cfg, item, prog)
		if r.Error != "" {
			failed++
		}
		results = append(results, r)
	}
	prog.stop()
	if cfg.json {
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
			}
		}
		elapsed := prog.elapsed()
		fmt.Fprintf(stdout, "pushed %d of %d paths: %d files, %s in %s (%s/s) to %s\n",
			len(results)-failed, len(results), prog.files.Load(), humanSize(prog.bytes.Load()),
			elapsed.Round(time.Millisecond), humanSize(int64(float64(prog.bytes.Load())/max(elapsed.Seconds(), 1e-3))), cfg.to)
	}
	if failed > 0 {
		return fmt.Errorf("the server refused %d of %d paths", failed, len(results))
	}
	return nil
}

// pushItem is one PATH to push: a file, or a tree of files.
type pushItem struct {
	local string
	dir   bool
	files []string // a tree's regular files, relative to local, slash-separated
	bytes int64
}

// pushPlan is every PATH to push, with the totals for the progress bar.
type pushPlan struct {
	items        []pushItem
	files, bytes int64
}

// planPush stats every PATH and walks the directories, so the progress
// bar knows the totals; links and special files are skipped with a
// warning.
func planPush(paths []string, stderr io.Writer) (*pushPlan, error) {
	plan := &pushPlan{}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		item := pushItem{local: p, dir: st.IsDir()}
		switch {
		case st.Mode().IsRegular():
			item.files, item.bytes = []string{""}, st.Size()
		case st.IsDir():
			err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					return nil
				}
				info, err := d.Info()
				if err != nil {
					return err
				}
				if !info.Mode().IsRegular() {
					fmt.Fprintf(stderr, "depotfs push: skipping %s: not a regular file (%s)\n", q, info.Mode().Type())
					return nil
				}
				rel, err := filepath.Rel(p, q)
				if err != nil {
					return err
				}
				item.files = append(item.files, filepath.ToSlash(rel))
				item.bytes += info.Size()
				return nil
			})
			if err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%s: not a regular file or a directory", p)
		}
		plan.items = append(plan.items, item)
		plan.files += int64(len(item.files))
		plan.bytes += item.bytes
	}
	return plan, nil
}

// connectPush connects and initializes an MCP client of the server at url.
func connectPush(ctx context.Context, url string, creds *clientCreds) (*client.Client, error) {
	c, err := client.NewStreamableHttpClient(url, creds.options()...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "depotfs-push", Version: version()}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, fmt.Errorf("connect to %s (is depotfs serve running there, and are the credentials right?): %w", url, err)
	}
	return c, nil
}

// pushOne sends one PATH: guide_begin_upload, then the PUT of the file's
// bytes, or of the tree as a tar stream.
func pushOne(ctx context.Context, c *client.Client, cfg *pushConfig, item pushItem, prog *progress) pushed {
	dest := path.Join(cfg.to, filepath.Base(filepath.Clean(item.local)))
	r := pushed{Local: item.local, Path: dest}
	args := map[string]any{"path": dest}
	if item.dir {
		args["format"] = "tar"
	} else {
		args["size"] = item.bytes
	}
	var begun struct {
		UploadURL string `json:"upload_url"`
	}
	if err := callGuide(ctx, c, "guide_begin_upload", args, &begun); err != nil {
		r.Error = err.Error()
		return r
	}
	var body io.Reader
	size := int64(-1)
	local := sha256.New()
	if item.dir {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTree(pw, item, prog)) }()
		defer pr.Close()
		body = pr
	} else {
		f, err := os.Open(item.local)
		if err != nil {
			r.Error = err.Error()
			return r
		}
		defer f.Close()
		body, size = io.TeeReader(&countReader{r: f, prog: prog}, local), item.bytes
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, begun.UploadURL, body)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	req.ContentLength = size
	if cfg.creds.token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.creds.token)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg.creds.tls, Proxy: http.ProxyFromEnvironment}}
	resp, err := hc.Do(req)
	if err != nil {
		r.Error = "PUT: " + err.Error()
		return r
	}
	defer resp.Body.Close()
	var env struct {
		mcpserver.Envelope
		Data json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		r.Error = fmt.Sprintf("PUT: HTTP %d with an unreadable reply: %v", resp.StatusCode, err)
		return r
	}
	if !env.Success {
		if env.Error != nil {
			r.Error = fmt.Sprintf("%s error: %s", env.Error.Type, env.Error.Message)
		} else {
			r.Error = fmt.Sprintf("PUT: HTTP %d", resp.StatusCode)
		}
		return r
	}
	r.Reply, r.Files, r.Bytes = env.Data, len(item.files), item.bytes
	if !item.dir {
		prog.files.Add(1)
		var d struct {
			SHA256 string `json:"sha256"`
		}
		json.Unmarshal(env.Data, &d)
		if want := hex.EncodeToString(local.Sum(nil)); d.SHA256 != want {
			r.Error = fmt.Sprintf("the server stored sha256 %s, the file read %s: it changed while it was sent; push it again", d.SHA256, want)
		}
	}
	return r
}

// callGuide calls a guide tool and decodes its envelope's data into data.
func callGuide(ctx context.Context, c *client.Client, tool string, args map[string]any, data any) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return fmt.Errorf("%s: reply: %w", tool, err)
	}
	var env struct {
		mcpserver.Envelope
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s: reply: %w", tool, err)
	}
	if !env.Success {
		if env.Error != nil {
			return fmt.Errorf("%s error: %s", env.Error.Type, env.Error.Message)
		}
		return fmt.Errorf("%s failed", tool)
	}
	return json.Unmarshal(env.Data, data)
}

// writeTree writes the regular files of item as a tar stream to w.
func writeTree(w io.Writer, item pushItem, prog *progress) error {
	tw := tar.NewWriter(w)
	for _, rel := range item.files {
		p := filepath.Join(item.local, filepath.FromSlash(rel))
		if err := addTarFile(tw, p, rel, prog); err != nil {
			return err
		}
		prog.files.Add(1)
	}
	return tw.Close()
}

// addTarFile writes the file at p as the tar entry name.
func addTarFile(tw *tar.Writer, p, name string, prog *progress) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: int64(st.Mode().Perm()), Size: st.Size(), ModTime: st.ModTime(), Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(tw, &countReader{r: io.LimitReader(f, st.Size()), prog: prog})
	if err == nil && n != st.Size() {
		err = fmt.Errorf("%s shrank while it was sent", p)
	}
	return err
}

// countReader adds what is read through it to the progress.
type countReader struct {
	r    io.Reader
	prog *progress
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.prog.bytes.Add(int64(n))
	return n, err
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
