package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/depotfs/depotfs/mcpserver"
)

var runUploads = group("uploads", "The chunked uploads of a running depotfs serve: an abandoned upload holds room against\n--max-store-size until --upload-timeout; drop it to free the room now. Both commands talk\nto the server over MCP, as 'depotfs status' does (the database allows one process).", []command{
	{"list", "list the chunked uploads a running server holds (in progress, or kept for retries)", runUploadsList},
	{"drop", "drop uploads by id, or all idle for --idle, freeing the room they hold", runUploadsDrop},
})

// printUploads writes uploads as a table for people.
func printUploads(w io.Writer, ups []mcpserver.UploadInfo) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPATH\tCHUNKS\tBYTES\tIDLE\tSTATE")
	for _, u := range ups {
		state := "in progress"
		if u.Complete {
			state = "complete (kept for retries)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%v\t%s\n", u.UploadID, u.Path, u.ReceivedChunks, u.ChunkCount,
			humanSize(u.ReceivedBytes), time.Duration(u.IdleSeconds)*time.Second, state)
	}
	return tw.Flush()
}

// uploadsFlags declares the uploads commands' flags: the connection's,
// and the depot path they look under.
func uploadsFlags(fs *flag.FlagSet) (*serverClient, *string) {
	u := &serverClient{name: "depotfs-uploads"}
	u.flags(fs, "print the reply data as JSON instead of a table")
	return u, fs.String("path", "/", "only uploads of files under this depot `path`")
}

func runUploadsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("uploads list", `Usage: depotfs uploads list [flags]

Lists the chunked uploads a running "depotfs serve" holds (guide_list_uploads):
id, file, chunks received, bytes held, time since the last chunk. Uploads in
progress hold room against --max-store-size until --upload-timeout, or until
'depotfs uploads drop'. Credentials as for 'depotfs status'.

Examples:
  depotfs uploads list
  depotfs uploads list --path /datasets --json

Flags:
`)
	u, path := uploadsFlags(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	var d mcpserver.ListUploadsData
	if printed, err := u.call(ctx, stdout, "guide_list_uploads", map[string]any{"path": *path}, &d); printed || err != nil {
		return err
	}
	if len(d.Uploads) == 0 {
		fmt.Fprintf(stdout, "no uploads under %s\n", d.Path)
		return nil
	}
	if err := printUploads(stdout, d.Uploads); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n%d upload(s); those in progress hold %s against the store limit\n", len(d.Uploads), humanSize(d.Bytes))
	return nil
}

func runUploadsDrop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("uploads drop", `Usage: depotfs uploads drop [flags] [ID...]

Drops chunked uploads of a running "depotfs serve" (guide_drop_uploads): the
ones named, or with --idle every upload that received no chunk for that long,
or both (named and idle). The room they held against --max-store-size is free
at once; a client that sends another chunk starts its upload anew. An upload
storing a chunk right now is kept. Each drop is written to the audit log with
the caller's identity. Credentials as for 'depotfs status'.

Examples:
  depotfs uploads drop train-2024
  depotfs uploads drop --idle 30m
  depotfs uploads drop --idle 0 --path /scratch

Flags:
`)
	u, path := uploadsFlags(fs)
	idle := fs.Duration("idle", -1, "drop only uploads that received no chunk for this `duration` (e.g. 30m); without IDs: every such upload; 0: however recent")
	ids, err := parseFlagsArgs(fs, args, stderr, -1, "upload ids")
	if err != nil {
		return err
	}
	if len(ids) == 0 && *idle < 0 {
		return usageError{fmt.Errorf("name the uploads to drop, or give --idle (--idle 0 drops every upload)")}
	}
	toolArgs := map[string]any{"path": *path}
	if len(ids) > 0 {
		toolArgs["upload_ids"] = ids
	}
	if *idle >= 0 {
		toolArgs["idle_seconds"] = int64(idle.Seconds())
	}
	var d mcpserver.DropUploadsData
	if printed, err := u.call(ctx, stdout, "guide_drop_uploads", toolArgs, &d); printed || err != nil {
		return err
	}
	for _, up := range d.Dropped {
		fmt.Fprintf(stdout, "dropped %s (%s, %d/%d chunks, %s)\n", up.UploadID, up.Path, up.ReceivedChunks, up.ChunkCount, humanSize(up.ReceivedBytes))
	}
	for _, k := range d.Kept {
		fmt.Fprintf(stdout, "kept %s: %s\n", k.UploadID, k.Reason)
	}
	fmt.Fprintf(stdout, "%d upload(s) dropped, %s freed\n", len(d.Dropped), humanSize(d.Freed))
	return nil
}
