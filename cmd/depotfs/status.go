package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/depotfs/depotfs/mcpserver"
)

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := serverClient{name: "depotfs-status"}
	fs := newFlagSet("status", `Usage: depotfs status [flags]

Asks a running "depotfs serve" for its statistics and limits over MCP (the
guide_cache_stats tool) and prints them. The database allows one process at a
time, so status never opens it: the server must be running and reachable
over streamable HTTP.

A server that requires authentication takes a bearer token (DEPOTFS_TOKEN, or
--token-file) or a client certificate (--cert and --key); an https --url
trusts the server with --ca.

Examples:
  depotfs status
  DEPOTFS_TOKEN=dfs1_... depotfs status --url http://127.0.0.1:7411/mcp
  depotfs status --url https://depot.example.org:7411/mcp \
      --ca ca.crt --cert agent.crt --key agent.key --json

Flags:
`)
	cfg.flags(fs, "print the statistics as JSON (guide_cache_stats' data) instead of a table")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	var st mcpserver.CacheStats
	if printed, err := cfg.call(ctx, stdout, "guide_cache_stats", map[string]any{}, &st); printed || err != nil {
		return err
	}
	return printStatus(stdout, cfg.url, &st)
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
		{"raw uploads arriving", humanSize(s.ReceivingBytes) + "\t(not yet stored; count against the size limit)"},
		{"evictions", fmt.Sprintf("%d\t(%s)", s.Evictions, humanSize(s.EvictedBytes))},
		{"expiries", n(s.Expiries, 10)},
		{"leaked chunks swept", n(s.SweptChunks, 10) + "\t(left by a crashed host; --store nats)"},
		{"cache hits / misses", fmt.Sprintf("%d / %d", s.Hits, s.Misses)},
		{"snapshots", n(s.Snapshots, 10)},
		{"versions kept", fmt.Sprintf("%d\t(%s only they hold)", s.Versions, humanSize(s.HeldBytes))},
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
		[2]string{"keep versions", strconv.Itoa(l.KeepVersions) + "\t(earlier versions of each file)"},
	)
	if len(st.Caller.Limits) > 0 {
		rows = append(rows, [2]string{"", ""}, [2]string{"YOURS", "\t" + st.Caller.Identity + ", tenant " + st.Caller.Tenant})
		for _, q := range st.Caller.Limits {
			name := strings.TrimSpace(strings.ReplaceAll(q.Name, "_", " ") + " " + q.Prefix)
			rows = append(rows, [2]string{name, fmt.Sprintf("%d of %d\t(%s)", q.Held, q.Limit, q.Flag)})
		}
	}
	for _, r := range rows {
		// Every line has a cell, blank ones too, so one alignment spans
		// all sections.
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}
