package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver"
)

// statusConfig is what "depotfs status" is told by flags and environment.
type statusConfig struct {
	url     string
	json    bool
	timeout time.Duration
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg statusConfig
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.StringVar(&cfg.url, "url", "http://127.0.0.1:7411/mcp", "MCP `endpoint` of the running depotfs serve")
	fs.BoolVar(&cfg.json, "json", false, "print the statistics as JSON (guide_cache_stats' data) instead of a table")
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Second, "give up on the server after this long")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: depotfs status [flags]

Asks a running "depotfs serve" for its statistics and limits over MCP (the
guide_cache_stats tool) and prints them. The database allows one process at a
time, so status never opens it: the server must be running and reachable
over streamable HTTP.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if cfg.timeout <= 0 {
		return usageError{fmt.Errorf("--timeout %v: want a positive duration", cfg.timeout)}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	st, err := fetchStatus(ctx, cfg.url)
	if err != nil {
		return err
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	return printStatus(stdout, cfg.url, st)
}

// fetchStatus calls guide_cache_stats on the server at url.
func fetchStatus(ctx context.Context, url string) (*mcpserver.CacheStats, error) {
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "depotfs-status", Version: version()}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, fmt.Errorf("connect to %s (is depotfs serve running there?): %w", url, err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "guide_cache_stats"
	req.Params.Arguments = map[string]any{}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("guide_cache_stats at %s: %w", url, err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, fmt.Errorf("guide_cache_stats at %s: reply: %w", url, err)
	}
	var env struct {
		mcpserver.Envelope
		Data *mcpserver.CacheStats `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, fmt.Errorf("guide_cache_stats at %s: reply: %w", url, err)
	}
	if !env.Success || env.Data == nil {
		if env.Error != nil {
			return nil, fmt.Errorf("guide_cache_stats at %s: %s error: %s", url, env.Error.Type, env.Error.Message)
		}
		return nil, errors.New("guide_cache_stats at " + url + ": the server sent no statistics")
	}
	return env.Data, nil
}

// printStatus writes the statistics as a table for people.
func printStatus(w io.Writer, url string, st *mcpserver.CacheStats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	s, f, l := st.Store, st.Fetch, st.Limits
	bytes := func(n int64) string { return fmt.Sprintf("%s\t(%d bytes)", humanSize(n), n) }
	limit := func(n int64) string {
		if n == 0 {
			return "none"
		}
		return fmt.Sprintf("%s\t(%d bytes)", formatSize(n), n)
	}
	seconds := func(v float64, zero string) string {
		if v == 0 {
			return zero
		}
		return (time.Duration(v * float64(time.Second))).String()
	}
	n := strconv.FormatInt
	rows := [][2]string{
		{"depotfs", url},
		{"revision", strconv.FormatUint(st.Revision, 10)},
		{"", ""},
		{"STORE", ""},
		{"files", n(s.Files, 10)},
		{"placeholders", n(s.Placeholders, 10) + "\t(listed, stale or evicted: read on demand)"},
		{"directories", n(s.Directories, 10)},
		{"stored", bytes(s.StoredBytes)},
		{"files' total size", bytes(s.LogicalBytes)},
		{"saved by dedup", bytes(s.DedupSavedBytes)},
		{"distinct contents", n(s.Blobs, 10)},
		{"uploads in progress", fmt.Sprintf("%d\t(%s)", s.Uploads, humanSize(s.UploadBytes))},
		{"evictions", fmt.Sprintf("%d\t(%s)", s.Evictions, humanSize(s.EvictedBytes))},
		{"expiries", n(s.Expiries, 10)},
		{"cache hits / misses", fmt.Sprintf("%d / %d", s.Hits, s.Misses)},
		{"", ""},
		{"FETCHES", ""},
	}
	if f.Enabled {
		rows = append(rows,
			[2]string{"pending", fmt.Sprintf("%d\t(%d programs waiting)", f.Pending, f.Waiting)},
			[2]string{"requested", strconv.FormatUint(f.Requested, 10)},
			[2]string{"fetched", strconv.FormatUint(f.Fetched, 10)},
			[2]string{"timed out", strconv.FormatUint(f.TimedOut, 10)},
			[2]string{"abandoned", strconv.FormatUint(f.Abandoned, 10)},
			[2]string{"withdrawn", strconv.FormatUint(f.Withdrawn, 10)},
		)
	} else {
		rows = append(rows, [2]string{"on demand", "off (not mounted)"})
	}
	rows = append(rows,
		[2]string{"", ""},
		[2]string{"LIMITS", ""},
		[2]string{"max store size", limit(l.MaxStoreBytes)},
		[2]string{"max file size", limit(l.MaxFileBytes)},
		[2]string{"max content per call", limit(l.MaxContentBytes)},
		[2]string{"max chunks", strconv.Itoa(l.MaxChunks)},
		[2]string{"fetch timeout", seconds(l.FetchTimeoutSeconds, "none (not mounted)")},
		[2]string{"upload ttl", seconds(l.UploadTTLSeconds, "none (uploads are kept)")},
	)
	for _, r := range rows {
		// Every line has a cell, blank ones too, so one alignment spans
		// all sections.
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}
