package mcpserver

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// ExportPath is where the HTTP listener serves an export of the depot
// ('depotfs export --url'): a GET answered with the export (a tar) as the
// body, and its revision in the ExportRevisionHeader. The caller needs
// the backup right (backup:/:r), as for a backup: an export holds every
// file.
const ExportPath = "/export"

// ExportRevisionHeader carries the revision an export is as of.
const ExportRevisionHeader = "Depotfs-Export-Revision"

// ExportTool is the name of exports in the audit log.
const ExportTool = "export"

// serveExport streams an export to a caller with the backup right, and
// audits it as one call. A client reading slower than the HTTP limits
// allow is cut (the export holds a snapshot for as long as it runs), and
// a failure once the body has started cuts the response off, so the
// client sees no end of the tar and fails.
func (s *Server) serveExport(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "ask for an export with GET", http.StatusMethodNotAllowed)
		return
	}
	c := s.rt.NewCall(r.Context(), ExportTool, ExportTool)
	c.Path = depotpath.Root
	var err error
	started := false
	switch {
	case s.opts.Export == nil:
		err = &tool.Refusal{Type: tool.ErrorNotFound, Message: "this server offers no export", Instruction: "Use depotfs export --db or --store on the depot itself."}
	case !c.Perms().Explicit(BackupTool, depotpath.Root, grant.Read):
		err = &policy.Denied{Tool: ExportTool, Path: depotpath.Root, Access: grant.Read,
			Rule: fmt.Sprintf("an export needs a grant naming the backup right (%s:/:r); grants: %s", BackupTool, c.Perms())}
	default:
		err = s.opts.Export(r.Context(), newWatchedResponse(w, s.opts.HTTP), func(rev uint64) {
			started = true
			c.Status = "revision " + strconv.FormatUint(rev, 10)
			w.Header().Set("Content-Type", "application/x-tar")
			w.Header().Set(ExportRevisionHeader, strconv.FormatUint(rev, 10))
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
		http.Error(w, "depotfs cannot write its audit log, so it refuses exports until it can", http.StatusServiceUnavailable)
	case err != nil:
		writeNotStarted(w, err)
	}
}
