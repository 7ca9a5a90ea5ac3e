package main

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
)

func runTools(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tools", `Usage: depotfs tools [flags]

Prints the reference of every MCP tool of the chosen profiles, generated from
the tools as depotfs serve registers them: each tool's description, its
arguments (type, required or optional, default, constraints), examples of
calls and replies, and its security notes. The reference in docs/tools.md
is this output for --tools guide,provider,fs.

Flags:
`)
	tools := fs.String("tools", "guide,provider", "comma-separated tool `profiles` to document: guide, provider, fs (as for depotfs serve)")
	format := fs.String("format", "markdown", "output `format`: markdown")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *format != "markdown" {
		return usageError{fmt.Errorf("--format %q: the only format is markdown", *format)}
	}
	profiles, err := mcpserver.ParseProfiles(*tools)
	if err != nil {
		return usageError{fmt.Errorf("--tools %q: %w", *tools, err)}
	}
	w := bufio.NewWriter(stdout)
	// The reference shows serve's defaults.
	opts := &mcpserver.Options{Tools: profiles, Settings: mcpserver.Settings{KeepVersions: store.DefaultKeepVersions}}
	if err := mcpserver.WriteToolDocs(w, opts); err != nil {
		return err
	}
	return w.Flush()
}
