package mcpserver

import (
	"context"
	"fmt"
	"io"
	"net/http"

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

// serveExport streams an export to a caller with the backup right (see
// serveTar): an export holds every file.
func (s *Server) serveExport(w http.ResponseWriter, r *http.Request) {
	t := tarStream{tool: ExportTool, one: "an export", many: "exports", revisionHeader: ExportRevisionHeader,
		rule: fmt.Sprintf("an export needs a grant naming the backup right (%s:/:r)", BackupTool),
		none: &tool.Refusal{Type: tool.ErrorNotFound, Message: "this server offers no export",
			Instruction: "Use depotfs export --db or --store on the depot itself."}}
	if s.opts.Export != nil {
		t.write = func(ctx context.Context, w io.Writer, start func(rev uint64, h http.Header)) error {
			return s.opts.Export(ctx, w, func(rev uint64) { start(rev, nil) })
		}
	}
	s.serveTar(w, r, t)
}
