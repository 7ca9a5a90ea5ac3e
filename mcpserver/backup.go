package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// BackupPath is where the HTTP listener serves an online backup: a GET
// answered with the backup container (package internal/backup) as the
// body, and its revision in the BackupRevisionHeader.
const BackupPath = "/backup"

// BackupRevisionHeader carries the revision a backup is as of, and
// BackupSizeHeader the size of its database, most of the body (for a
// progress bar: the body is streamed, without a Content-Length).
const (
	BackupRevisionHeader = "Depotfs-Backup-Revision"
	BackupSizeHeader     = "Depotfs-Backup-Db-Size"
)

// BackupTool is the name a grant gives the backup right with
// (backup:/:r), and the name of backups in the audit log. A group or the
// * wildcard does not give it: a backup copies every file and the audit
// log's key, so the right is given on purpose.
const BackupTool = "backup"

// serveBackup streams a backup to a caller with the backup right (see
// serveTar); the container then lacks its last member when it is cut
// off, which every reader refuses.
func (s *Server) serveBackup(w http.ResponseWriter, r *http.Request) {
	t := tarStream{tool: BackupTool, one: "a backup", many: "backups", revisionHeader: BackupRevisionHeader,
		rule: fmt.Sprintf("a backup needs a grant naming it (%s:/:r)", BackupTool),
		none: &tool.Refusal{Type: tool.ErrorNotFound, Message: "this server offers no online backup",
			Instruction: "Use depotfs backup --db or depotfs export on the depot itself."}}
	if s.opts.Backup != nil {
		t.write = func(ctx context.Context, w io.Writer, start func(rev uint64, h http.Header)) error {
			return s.opts.Backup(ctx, w, func(rev uint64, dbSize int64) {
				start(rev, http.Header{BackupSizeHeader: {strconv.FormatInt(dbSize, 10)}})
			})
		}
	}
	s.serveTar(w, r, t)
}

// tarStream is a tar the listener streams to a caller with the backup
// right: a backup or an export.
type tarStream struct {
	tool           string // the audit log's name
	one, many      string // "a backup", "backups"
	revisionHeader string // carries the revision the tar is as of
	rule           string // why a caller without the right is refused
	none           *tool.Refusal
	// write streams the tar to w, calling start with its revision and
	// any other headers before the first byte; nil when the server
	// offers none (the caller gets none).
	write func(ctx context.Context, w io.Writer, start func(rev uint64, h http.Header)) error
}

// serveTar streams t to a caller with the backup right, and audits it as
// one call. A client reading slower than the HTTP limits allow is cut (a
// backup or an export holds its revision for as long as it runs), and a
// failure once the body has started cuts the response off, so the client
// sees no end of the tar and fails.
func (s *Server) serveTar(w http.ResponseWriter, r *http.Request, t tarStream) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "ask for "+t.one+" with GET", http.StatusMethodNotAllowed)
		return
	}
	c := s.rt.NewCall(r.Context(), t.tool, t.tool)
	c.Path = depotpath.Root
	var err error
	started := false
	switch {
	case t.write == nil:
		err = t.none
	case !c.Perms().Explicit(BackupTool, depotpath.Root, grant.Read):
		err = &policy.Denied{Tool: t.tool, Path: depotpath.Root, Access: grant.Read,
			Rule: fmt.Sprintf("%s; grants: %s", t.rule, c.Perms())}
	default:
		err = t.write(r.Context(), newWatchedResponse(w, s.opts.HTTP), func(rev uint64, h http.Header) {
			started = true
			c.Status = "revision " + strconv.FormatUint(rev, 10)
			w.Header().Set("Content-Type", "application/x-tar")
			w.Header().Set(t.revisionHeader, strconv.FormatUint(rev, 10))
			for k, v := range h {
				w.Header()[k] = v
			}
			w.WriteHeader(http.StatusOK)
		})
	}
	auditErr := s.rt.Finish(c, err)
	switch {
	case started && (err != nil || auditErr != nil):
		panic(http.ErrAbortHandler)
	case started:
		return
	case auditErr != nil:
		http.Error(w, "depotfs cannot write its audit log, so it refuses "+t.many+" until it can", http.StatusServiceUnavailable)
	case err != nil:
		writeNotStarted(w, err)
	}
}

// writeNotStarted answers a backup or an import that did not start: 403 for
// a caller without the right, 501 for a server that does not offer it,
// 500 for anything else.
func writeNotStarted(w http.ResponseWriter, err error) {
	f := tool.Classify(err)
	status := http.StatusInternalServerError
	switch f.Type {
	case tool.ErrorSecurity:
		status = http.StatusForbidden
	case tool.ErrorNotFound:
		status = http.StatusNotImplemented
	}
	http.Error(w, f.Message+"\n"+f.Instruction, status)
}

// ImportPath is where the HTTP listener takes an import: a PUT whose body
// is an export ('depotfs export'), answered with its ImportResult as JSON.
// The caller needs the backup right to write (backup:/:w), given by a
// grant naming it: an import writes every path, with pins and expiries.
const ImportPath = "/import"

// ImportTool is the name of imports in the audit log.
const ImportTool = "import"

// ImportResult counts what an import did.
type ImportResult struct {
	Files        int   `json:"files"`
	Bytes        int64 `json:"bytes"`
	Skipped      int   `json:"skipped"` // identical content and metadata already there
	Placeholders int   `json:"placeholders"`
	Dirs         int   `json:"dirs"`
	Batches      int   `json:"batches"`
}

func (r ImportResult) String() string {
	return fmt.Sprintf("%d files (%d bytes) in %d batches, %d placeholders, %d directories; %d files already there",
		r.Files, r.Bytes, r.Batches, r.Placeholders, r.Dirs, r.Skipped)
}

// serveImport loads the export in the body of a caller with the backup
// right to write, and audits it as one call with its counts. Its body is
// watched as a raw upload's (see newHandler): no size limit, since an
// export is as large as the depot, but a stall or a revoked credential
// ends it.
func (s *Server) serveImport(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPut)
		http.Error(w, "send an export with PUT", http.StatusMethodNotAllowed)
		return
	}
	c := s.rt.NewCall(r.Context(), ImportTool, ImportTool)
	c.Path = depotpath.Root
	var err error
	var res ImportResult
	ran := false
	switch {
	case s.opts.Import == nil:
		err = &tool.Refusal{Type: tool.ErrorNotFound, Message: "this server takes no imports",
			Instruction: "Use depotfs import --db or --store on the depot itself."}
	case !c.Perms().Explicit(BackupTool, depotpath.Root, grant.Write):
		err = &policy.Denied{Tool: ImportTool, Path: depotpath.Root, Access: grant.Write,
			Rule: fmt.Sprintf("an import needs a grant naming the backup right (%s:/:w); grants: %s", BackupTool, c.Perms())}
	default:
		// Each path is checked as a write through the backup right: the
		// server's --allow and --deny, and the caller's grants, per path.
		may := func(p string) error {
			if _, err := c.Perms().Check(BackupTool, BackupTool, p, grant.Write); err != nil {
				c.Note(p)
				return err
			}
			return nil
		}
		res, err = s.opts.Import(r.Context(), r.Body, may)
		ran = true
		c.Status = res.String()
	}
	auditErr := s.rt.Finish(c, err)
	switch {
	case auditErr != nil && err == nil:
		http.Error(w, "the import is done, but depotfs cannot write its audit log: "+res.String(), http.StatusServiceUnavailable)
	case auditErr != nil:
		http.Error(w, "depotfs cannot write its audit log, so it refuses imports until it can", http.StatusServiceUnavailable)
	case err != nil && ran && errors.Is(err, policy.ErrDenied):
		// Refused before anything was written; the caller may replace the
		// whole depot, so the error names the refused paths.
		http.Error(w, fmt.Sprintf("import: %v", err), http.StatusForbidden)
	case err != nil && ran:
		// The caller holds the right to replace the whole depot: the
		// store's own words tell it what is wrong with its export.
		http.Error(w, fmt.Sprintf("import: %v\nimported before it: %s; send the export again to finish", err, res), http.StatusUnprocessableEntity)
	case err != nil:
		writeNotStarted(w, err)
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(res)
	}
}
