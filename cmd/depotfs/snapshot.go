package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/depotfs/depotfs/mcpserver"
)

var runSnapshot = group("snapshot", "The snapshots of a running depotfs serve (guide_snapshot): a snapshot holds the tree below\na path as it was, readable at MOUNT/.snapshots/NAME, until deleted. The commands talk to the\nserver over MCP, as 'depotfs status' does; see docs/snapshots.md.", []command{
	{"create", "hold the tree below --path as it is now, under a name", runSnapshotCreate},
	{"list", "list the snapshots you may read", runSnapshotList},
	{"delete", "delete a snapshot, freeing what only it held", runSnapshotDelete},
})

// snapshotCommand parses one snapshot command's flags and its NAME
// arguments (want of them: 0 or 1).
func snapshotCommand(name, usage string, args []string, stderr io.Writer, want int, extra func(fs *flag.FlagSet)) (*serverClient, []string, error) {
	u := serverClient{name: "depotfs-snapshot"}
	fs := newFlagSet("snapshot "+name, usage)
	u.flags(fs, "print the reply data as JSON instead of a table")
	if extra != nil {
		extra(fs)
	}
	names, err := parseFlagsArgs(fs, args, stderr, want, map[int]string{0: "no arguments", 1: "one snapshot NAME"}[want])
	return &u, names, err
}

func runSnapshotCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var path string
	var ttl time.Duration
	u, names, err := snapshotCommand("create", `Usage: depotfs snapshot create [flags] NAME

Holds the tree below --path as it is now under NAME, until deleted (or for
--ttl): nothing is copied, and programs read it at MOUNT/.snapshots/NAME.
Needs write access to --path; each identity holds at most
--max-snapshots-per-identity snapshots. Credentials as for 'depotfs status'.

Examples:
  depotfs snapshot create nightly
  depotfs snapshot create pre-migration --path /projects/app --ttl 72h

Flags:
`, args, stderr, 1, func(fs *flag.FlagSet) {
		fs.StringVar(&path, "path", "/", "the depot `path` whose tree the snapshot holds")
		fs.DurationVar(&ttl, "ttl", 0, "delete the snapshot after this `duration`; 0: keep it until deleted")
	})
	if err != nil {
		return err
	}
	toolArgs := map[string]any{"action": "create", "name": names[0], "path": path}
	if ttl > 0 {
		toolArgs["ttl_seconds"] = int64(max(time.Second, ttl) / time.Second)
	}
	return u.printSnapshots(ctx, stdout, toolArgs)
}

func runSnapshotList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	u, _, err := snapshotCommand("list", `Usage: depotfs snapshot list [flags]

Lists the snapshots you may read: name, path, the revision held, when it was
made and when it expires. Credentials as for 'depotfs status'.

Flags:
`, args, stderr, 0, nil)
	if err != nil {
		return err
	}
	return u.printSnapshots(ctx, stdout, map[string]any{"action": "list"})
}

func runSnapshotDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	u, names, err := snapshotCommand("delete", `Usage: depotfs snapshot delete [flags] NAME

Deletes the snapshot NAME; the content only it held is freed at once. Needs
write access to the snapshot's path. Credentials as for 'depotfs status'.

Flags:
`, args, stderr, 1, nil)
	if err != nil {
		return err
	}
	return u.printSnapshots(ctx, stdout, map[string]any{"action": "delete", "name": names[0]})
}

// printSnapshots calls guide_snapshot with args and prints the snapshots
// of its reply.
func (u *serverClient) printSnapshots(ctx context.Context, stdout io.Writer, args map[string]any) error {
	var d mcpserver.SnapshotData
	if printed, err := u.call(ctx, stdout, "guide_snapshot", args, &d); printed || err != nil {
		return err
	}
	if len(d.Snapshots) == 0 {
		fmt.Fprintln(stdout, "no snapshots")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPATH\tREVISION\tCREATED\tEXPIRES")
	for _, s := range d.Snapshots {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.Name, s.Path, s.Revision, s.Created, cmp.Or(s.Expires, "never"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if args["action"] == "delete" {
		fmt.Fprintln(stdout, "deleted")
	}
	return nil
}
