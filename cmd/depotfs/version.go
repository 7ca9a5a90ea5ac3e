package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// buildInfo is what the binary knows about how it was built.
type buildInfo struct {
	version  string // the main module's version, as serverInfo reports it
	revision string // the VCS commit, "" when the build did not stamp it
	time     string // the commit's time
	modified bool   // built from a tree with uncommitted changes
	goVer    string
}

// readBuildInfo reads the module version and VCS stamps that the Go
// toolchain embeds. A build from a git checkout gets a pseudo-version that
// names the commit (v0.0.0-20261125130655-6058a69bfff7, "+dirty" when
// modified); a build without VCS stamping (-buildvcs=false, a git
// worktree) reports "(devel)", as Go does.
func readBuildInfo() buildInfo {
	b := buildInfo{version: "(devel)", goVer: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.version = cmp.Or(bi.Main.Version, b.version)
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.time":
			b.time = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	if b.version == "(devel)" && b.revision != "" {
		// Only the main module's version is missing: the revision still
		// tells builds apart.
		b.version += "-" + b.revision[:min(len(b.revision), 12)]
		if b.modified {
			b.version += "+dirty"
		}
	}
	return b
}

// version is the version reported to MCP clients (serverInfo.version) and
// printed first by "depotfs version".
func version() string { return readBuildInfo().version }

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", `Usage: depotfs version

Prints the module version (the one MCP clients see as serverInfo.version),
the VCS revision the binary was built from, and the Go toolchain.
`)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	printVersion(stdout)
	return nil
}

func printVersion(w io.Writer) {
	b := readBuildInfo()
	fmt.Fprintf(w, "depotfs %s\n", b.version)
	switch {
	case b.revision == "":
		fmt.Fprintln(w, "revision unknown (built without VCS stamping: -buildvcs=false, or from a git worktree)")
	case b.modified:
		fmt.Fprintf(w, "revision %s (%s) with uncommitted changes\n", b.revision, b.time)
	default:
		fmt.Fprintf(w, "revision %s (%s)\n", b.revision, b.time)
	}
	fmt.Fprintf(w, "%s %s/%s\n", b.goVer, runtime.GOOS, runtime.GOARCH)
}
