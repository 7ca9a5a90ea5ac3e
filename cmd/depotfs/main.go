// Command depotfs lets agents push files over MCP and serves them to
// path-only programs through a read-only FUSE mount.
//
// Run "depotfs help" for the subcommands and "depotfs <command> -h" for the
// flags of one; every flag can also be set in the environment as
// DEPOTFS_<FLAG> (upper case, dashes as underscores).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one command of the binary ("serve"), or of a group ("ca
// init").
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "run the MCP server, the store and the read-only mount", runServe},
		{"ca", "a certificate authority for agents' client certificates (mTLS)", runCA},
		{"token", "bearer tokens for MCP clients without certificates", runToken},
		{"audit", "verify and query the tamper-evident audit log", runAudit},
		{"status", "show a running server's statistics and limits", runStatus},
		{"uploads", "list and drop the chunked uploads of a running server", runUploads},
		{"snapshot", "create, list and delete the snapshots of a running server", runSnapshot},
		{"push", "send files and directory trees to a running server over raw HTTP uploads", runPush},
		{"key", "make and rotate the keys of a depot sealed at rest", runKey},
		{"seal", "seal the content of an existing depot written without a key, offline and resumable", runSeal},
		{"compact", "shrink the database file offline to its live data", runCompact},
		{"upgrade", "upgrade an older database to this depotfs's layout offline, keeping a copy of the old file", runUpgrade},
		{"backup", "write a backup of the depot (online or offline) to a file, or verify one", runBackup},
		{"restore", "restore a backup written by 'depotfs backup' into a database", runRestore},
		{"export", "write the depot's tree and a manifest to a tar file, portable between stores", runExport},
		{"import", "load an export into a depot (bolt or NATS), in atomic batches", runImport},
		{"tools", "print the reference of the MCP tools as Markdown", runTools},
		{"version", "print the version and the revision it was built from", runVersion},
		{"flags", "print every command's flags, environment variables and defaults as Markdown", runFlags},
		{"completion", "print a shell completion script: bash, zsh or fish", runCompletion},
		{"help", "show a command's usage, flags and examples: depotfs help <command>", runHelp},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and turns its error into an exit code:
// 0 on success, 2 on a usage error, 1 otherwise.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		printVersion(stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, new(usageError)):
			fmt.Fprintf(stderr, "depotfs %s: %v\nRun 'depotfs %s -h' for help.\n", c.name, err, c.name)
			return 2
		default:
			fmt.Fprintf(stderr, "depotfs %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "depotfs: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `depotfs keeps files that agents push over MCP in an embedded database and
serves them through a read-only FUSE mount, so programs that only take paths
can read them.

Usage:
  depotfs <command> [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Every flag can also be set as an environment variable DEPOTFS_<FLAG>, for
example DEPOTFS_MOUNT=/mnt/depot. Run 'depotfs help <command>' for its flags
and examples.
`)
}

// usageError marks an error in the command line rather than in the work.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
