package mcpserver

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

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
		res, err = s.opts.Import(r.Context(), r.Body)
		ran = true
		c.Status = res.String()
	}
	auditErr := s.rt.Finish(c, err)
	switch {
	case auditErr != nil && err == nil:
		http.Error(w, "the import is done, but depotfs cannot write its audit log: "+res.String(), http.StatusServiceUnavailable)
	case auditErr != nil:
		http.Error(w, "depotfs cannot write its audit log, so it refuses imports until it can", http.StatusServiceUnavailable)
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
