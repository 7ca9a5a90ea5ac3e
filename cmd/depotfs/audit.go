package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
)

var runAudit = group("audit", "The tamper-evident audit log of depotfs serve: one JSON line per tool call and refused authentication.", []command{
	{"verify", "check the audit log's hash chain and checkpoint; name every record edited, deleted, reordered or cut off", runAuditVerify},
	{"query", "print audit records by identity, tool, path prefix, decision and time, as a table or JSON lines", runAuditQuery},
})

// auditFlags is the flag set of "depotfs audit name" with --audit-log and
// --db, from which the log's default location follows as in serve, and a
// function giving the log.
func auditFlags(name string) (*flag.FlagSet, func() string) {
	fs := flag.NewFlagSet("audit "+name, flag.ContinueOnError)
	log := fs.String("audit-log", "", "audit log `file`; default audit.log beside --db, as for serve")
	db := fs.String("db", defaultDB(), "database `file` of the serve whose default audit log to read")
	return fs, func() string { return cmp.Or(*log, defaultAuditLog(*db)) }
}

func runAuditVerify(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, path := auditFlags("verify")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	rep, err := audit.Verify(path())
	for _, w := range rep.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if ve, ok := errors.AsType[*audit.VerifyError](err); ok {
		for _, p := range ve.Problems {
			fmt.Fprintln(stdout, "TAMPERED:", p)
		}
		return fmt.Errorf("%s: %d problem(s); the log is not what depotfs wrote", path(), len(ve.Problems))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ok: %s: %d record(s) in %d file(s), seq %d..%d, chain intact, checkpoint at %d\n",
		path(), rep.Records, rep.Files, rep.First, rep.Last, rep.Checkpoint)
	return nil
}

func runAuditQuery(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, path := auditFlags("query")
	var f audit.Filter
	var since, until string
	fs.StringVar(&f.Identity, "identity", "", "only records of this `identity`: transport:subject, or the subject alone (depotfs://example.org/agent/a)")
	fs.StringVar(&f.Tool, "tool", "", "only calls of this `tool`")
	fs.StringVar(&f.Path, "path", "", "only records naming a path within this depot `prefix` (whole components)")
	fs.StringVar((*string)(&f.Decision), "decision", "", "only records of this `decision`: allow or deny")
	fs.StringVar(&f.Event, "event", "", "only records of this `event`: call (a tool call or resource read) or auth (a refused authentication)")
	fs.StringVar(&since, "since", "", "only records at or after this `time`: RFC 3339, or a duration back from now such as 1h")
	fs.StringVar(&until, "until", "", "only records before this `time`: RFC 3339, or a duration back from now")
	asJSON := fs.Bool("json", false, "print JSON lines (the records as logged) instead of a table")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	now := time.Now()
	var sinceErr, untilErr error
	f.Since, sinceErr = parseWhen(since, now)
	f.Until, untilErr = parseWhen(until, now)
	if err := cmp.Or(
		failIf(f.Decision != "" && f.Decision != audit.Allow && f.Decision != audit.Deny, "--decision %q: want allow or deny", f.Decision),
		failIf(sinceErr != nil, "--since: %w", sinceErr),
		failIf(untilErr != nil, "--until: %w", untilErr),
		failIf(f.Path != "" && !strings.HasPrefix(f.Path, "/"), "--path %q: want an absolute depot path", f.Path),
	); err != nil {
		return usageError{err}
	}

	var tw *tabwriter.Writer
	if !*asJSON {
		tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tSEQ\tIDENTITY\tTOOL\tDECISION\tERROR\tPATHS\tREASON")
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	n := 0
	err := audit.Scan(path(), func(r audit.Record) error {
		if !f.Match(r) {
			return nil
		}
		n++
		if *asJSON {
			return enc.Encode(r)
		}
		tool := r.Tool
		if r.Event == audit.EventAuth {
			tool = "(auth " + r.Stage + ")"
		}
		paths := strings.Join(r.Paths, ",")
		if r.MorePaths > 0 {
			paths += fmt.Sprintf(",+%d", r.MorePaths)
		}
		decision := string(r.Decision)
		if r.Count > 1 {
			decision += fmt.Sprintf(" x%d", r.Count)
		}
		_, err := fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Format(time.RFC3339), r.Seq,
			cmp.Or(r.Identity, "-"), cmp.Or(tool, "-"), decision, cmp.Or(r.Error, "-"), cmp.Or(clip(paths, 60), "-"),
			clip(r.Reason, 100))
		return err
	})
	if tw != nil {
		if ferr := tw.Flush(); err == nil {
			err = ferr
		}
		if err == nil {
			fmt.Fprintf(stderr, "%d record(s)\n", n)
		}
	}
	return err
}

// parseWhen reads an RFC 3339 time or a duration before now; "" is the
// zero time (no bound).
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-05-01T12:00:00Z) nor a duration (1h30m)", s)
	}
	return now.Add(-d), nil
}

// clip shortens s to n runes for a table cell.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
