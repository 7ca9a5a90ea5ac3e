package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
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

// serveBackup streams a backup to a caller with the backup right, and
// audits it as one call. A failure once the body has started cuts the
// response off: the container then lacks its last member, which every
// reader refuses.
func (s *Server) serveBackup(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "ask for a backup with GET", http.StatusMethodNotAllowed)
		return
	}
	c := s.rt.NewCall(r.Context(), BackupTool, BackupTool)
	c.Path = depotpath.Root
	var err error
	started := false
	switch {
	case s.opts.Backup == nil:
		err = &tool.Refusal{Type: tool.ErrorNotFound, Message: "this server offers no online backup",
			Instruction: "Use depotfs backup --db or depotfs export on the depot itself."}
	case !c.Perms().Explicit(BackupTool, depotpath.Root, grant.Read):
		err = &policy.Denied{Tool: BackupTool, Path: depotpath.Root, Access: grant.Read,
			Rule: fmt.Sprintf("a backup needs a grant naming it (%s:/:r); grants: %s", BackupTool, c.Perms())}
	default:
		err = s.opts.Backup(r.Context(), newWatchedResponse(w, s.opts.HTTP), func(rev uint64, dbSize int64) {
			started = true
			c.Status = "revision " + strconv.FormatUint(rev, 10)
			w.Header().Set("Content-Type", "application/x-tar")
			w.Header().Set(BackupRevisionHeader, strconv.FormatUint(rev, 10))
			w.Header().Set(BackupSizeHeader, strconv.FormatInt(dbSize, 10))
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
		http.Error(w, "depotfs cannot write its audit log, so it refuses backups until it can", http.StatusServiceUnavailable)
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
