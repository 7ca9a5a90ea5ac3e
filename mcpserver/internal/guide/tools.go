// Package guide holds the guide_* tools, one file per tool named after it:
// the tools that push content into the depot (guide_cache_file,
// guide_cache_files, guide_begin_upload and its HTTP PUT, guide_read_file,
// guide_list_directory), report on it
// (guide_cache_stats), show what programs wait for
// (guide_pending_requests), follow its changes (guide_changes), and keep the depot's past (guide_snapshot,
// guide_file_history, guide_restore). They reply with the JSON envelope of package
// tool.
package guide

import (
	"embed"
	"fmt"
	"slices"
	"strconv"

	"github.com/depotfs/depotfs/feed"
	"github.com/depotfs/depotfs/mcpserver/internal/pending"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// docs are the tools' documents in the layout of tool.Docs; the reply
// frame is the envelope, whose data is the tool's result.
//
//go:embed doc
var docs embed.FS

// The hints of the guide tools: every one may be repeated.
var (
	// writes: the tool changes the depot (and may replace what a path
	// held); repeating a call with the same arguments is harmless.
	writes = tool.Hints{Destructive: true, Idempotent: true}
	// readOnly: the tool only reads.
	readOnly = tool.Hints{ReadOnly: true, Idempotent: true}
)

// tools builds the guide tools; its methods are their bodies.
type tools struct {
	opts    *tool.Env
	docs    *tool.Docs
	pending *pending.List
	uploads *Uploads
}

// Tools returns the guide tools, in the order they are listed, over env,
// the pending-requests list p and the raw uploads u (which the tools
// begin and u serves).
func Tools(env *tool.Env, p *pending.List, u *Uploads) []tool.Tool {
	s := &tools{opts: env, pending: p, uploads: u}
	u.tools = s
	s.docs = tool.NewDocs(docs, "doc", "data", map[string]string{"file": "file.json"}, env,
		"{{max_ttl}}", strconv.Itoa(maxTTLSeconds),
		"{{max_batch_files}}", strconv.Itoa(env.MaxBatchFiles),
		"{{upload_url_ttl}}", strconv.Itoa(int(env.UploadURLTTL.Seconds())),
		"{{max_batch_bytes}}", strconv.FormatInt(env.MaxBatchBytes, 10),
		"{{upload_ttl}}", uploadTTLDoc(env),
		"{{max_wait}}", strconv.Itoa(pending.MaxWaitSeconds),
		"{{max_wait_ms}}", strconv.FormatInt(feed.MaxWait.Milliseconds(), 10),
		"{{max_changes}}", strconv.Itoa(feed.MaxMax),
		"{{fetch_timeout}}", fetchTimeoutDoc(p),
		"{{pending_uri}}", pending.URI,
		"{{max_snapshots}}", strconv.Itoa(env.MaxSnapshotsPerIdentity),
		"{{keep_versions}}", strconv.Itoa(env.KeepVersions),
	)
	w, r := tool.Write, tool.Read
	upload := []tool.PathArg{w("path"), w("filename")}
	ts := s.docs.Tools(
		conditional(s.guideTool(toolCacheFile, "Cache a file in the depot", writes, s.cacheFile, upload...)),
		conditional(s.guideTool(toolCacheFiles, "Cache many files in the depot at once", writes, s.cacheFiles, upload...), "properties", "files", "items"),
		conditional(s.guideTool(toolBeginUpload, "Begin a raw upload of a large file", writes, s.beginUpload, upload...)),
		s.guideTool(toolListDirectory, "Describe a directory to the depot", writes, s.listDirectory, w("path"), w("name")),
		s.guideTool(toolReadFile, "Send a file's content to the depot", writes, s.readFile, upload...),
		s.guideTool(toolPendingRequests, "List the files programs are waiting for", readOnly, s.pendingRequests),
		s.guideTool(toolChanges, "List the changes below a path since a cursor", readOnly, s.changes),
		s.guideTool(toolCacheStats, "Show the depot's statistics and limits", readOnly, s.cacheStats),
		s.guideTool(toolListUploads, "List the chunked uploads in progress", readOnly, s.listUploads, r("path")),
		s.guideTool(toolDropUploads, "Drop abandoned chunked uploads", writes, s.dropUploads, w("path")),
		// Declared read, so that a caller with read grants only sees the
		// tool and may list; creating (the only action with a path) and
		// deleting need write access to the snapshot's path, which the
		// guarded store checks before anything is written.
		s.guideTool(toolSnapshot, "Create, list or delete snapshots", tool.Hints{Destructive: true}, s.snapshot, r("path")),
		s.guideTool(toolFileHistory, "List a file's kept versions", readOnly, s.fileHistory, r("path")),
		s.guideTool(toolRestore, "Make an earlier version of a file current again", writes, s.restore, tool.ReadWrite("path")),
	)
	u.begin = ts[slices.IndexFunc(ts, func(t tool.Tool) bool { return t.Spec.Name == toolBeginUpload })]
	return ts
}

// guideTool builds one guide tool.
func (s *tools) guideTool(name, title string, h tool.Hints, run tool.Func, paths ...tool.PathArg) tool.Tool {
	return tool.Tool{Spec: s.docs.Spec(name, title, h), Profile: tool.ProfileGuide, Paths: paths, Shape: tool.EnvelopeShape{}, Run: run}
}

// conditional adds if_revision and if_absent to t's input schema, at the
// object within names (see tool.ConditionSchema).
func conditional(t tool.Tool, within ...string) tool.Tool {
	t.Spec = tool.ConditionSchema(t.Spec, within...)
	return t
}

// uploadTTLDoc describes the expiry of filename-only uploads.
func uploadTTLDoc(env *tool.Env) string {
	if env.UploadTTL <= 0 {
		return "never (no upload expiry is configured)"
	}
	return fmt.Sprintf("%.0f seconds (%v)", env.UploadTTL.Seconds(), env.UploadTTL)
}

// fetchTimeoutDoc describes how long a program waits for a requested file.
func fetchTimeoutDoc(p *pending.List) string {
	if p.Broker() == nil {
		return "the fetch timeout"
	}
	return p.Broker().Timeout().String()
}
