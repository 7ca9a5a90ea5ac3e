package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// mistake is one call an agent gets wrong, and what depotfs must answer.
type mistake struct {
	name string
	tool string
	args map[string]any
	// fix lists texts the reply must contain: a refusal names the fix
	// (what to send instead, or which tool to call), an accepted call
	// names what it did in a warning. Each entry may give alternatives
	// separated by "|".
	fix []string
	// accept: the call succeeds (with a warning when fix is not empty);
	// otherwise it must be refused and change nothing.
	accept bool
	// same: an accepted call that must change nothing either.
	same bool
}

// reply is one tool reply as the mistakes table judges it, whatever the
// profile's shape.
type reply struct {
	isError  bool
	raw      string   // the text content
	text     string   // the reply's strings as the agent reads them
	internal bool     // depotfs failed internally (error type system, internal_error)
	warnings []string // the guide envelope's warnings
}

// callAny calls a tool of any profile and reads its reply.
func callAny(d *daemon, tool string, args map[string]any) (reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := d.client.CallTool(ctx, req)
	if err != nil {
		return reply{}, fmt.Errorf("%s: protocol error: %w", tool, err)
	}
	r := reply{isError: res.IsError}
	var raw string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			raw += tc.Text
		}
	}
	r.raw, r.text = raw, raw
	var all any
	if json.Unmarshal([]byte(raw), &all) == nil {
		r.text = strings.Join(texts(all, nil), "\n")
	}
	var shapes struct {
		Warnings []string `json:"warnings"`
		Error    any      `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &shapes) == nil {
		r.warnings = shapes.Warnings
		switch e := shapes.Error.(type) {
		case map[string]any: // guide envelope {type}, fs {code}
			r.internal = e["type"] == "system" || e["code"] == "internal_error"
		case string: // provider {"error", "error_type"}
			r.internal = strings.Contains(e, "failed internally")
		}
	}
	return r, nil
}

// TestMistakenCalls replays the mistakes agents make with every profile's
// tools and counts what the issue tracker counts: internal errors,
// mount paths accepted without a word, and refusals that do not name the
// fix. Each must be 0; each refusal must also leave the depot unchanged.
// Run it alone to see the counts: go test ./integration -run TestMistakenCalls -v
func TestMistakenCalls(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tools", "guide,provider,fs", "--rate-calls", "0"}})
	mnt := d.mount
	d.mustCall("guide_cache_file", map[string]any{"path": "/m/a.txt", "content": "alpha\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/m/dir/b.txt", "content": "beta\n"})
	var revs []uint64
	for i := range 6 {
		env := d.mustCall("guide_cache_file", map[string]any{"path": "/m/v.txt", "content": fmt.Sprintf("version %d\n", i)})
		revs = append(revs, uint64(env.Data["revision"].(float64)))
	}
	d.mustCall("guide_list_directory", map[string]any{"path": "/m/ph", "entries": []any{
		map[string]any{"name": "later.bin", "type": "file", "size": 10},
		map[string]any{"name": "pushed.bin", "type": "file", "size": 10},
	}})
	d.mustCall("guide_snapshot", map[string]any{"action": "create", "name": "snap1", "path": "/m"})
	current := revs[len(revs)-1] + 100
	gone := revs[0] // six writes: the first is no longer kept
	hex64 := strings.Repeat("ab", 32)

	cases := []mistake{
		// guide_cache_file
		{name: "cache_file at a mount path", tool: "guide_cache_file", args: map[string]any{"path": mnt + "/m/new.txt", "content": "x"}, fix: []string{`"/m/new.txt"`}, accept: true},
		{name: "cache_file sha256 with prefix", tool: "guide_cache_file", args: map[string]any{"path": "/m/p.txt", "content": "x", "sha256": "sha256:" + hex64}, fix: []string{`without the "sha256:" prefix`}},
		{name: "cache_file sha256 too short", tool: "guide_cache_file", args: map[string]any{"path": "/m/p.txt", "content": "x", "sha256": hex64[:63]}, fix: []string{"64 hexadecimal digits"}},
		{name: "cache_file content as a number", tool: "guide_cache_file", args: map[string]any{"path": "/m/p.txt", "content": 42}, fix: []string{"string"}},
		{name: "cache_file encoding binary", tool: "guide_cache_file", args: map[string]any{"path": "/m/p.txt", "content": "x", "encoding": "binary"}, fix: []string{`"base64"`}},
		{name: "cache_file mode as a number", tool: "guide_cache_file", args: map[string]any{"path": "/m/p.txt", "content": "x", "mode": 644}, fix: []string{`"0644"`}},
		{name: "cache_file mtime in milliseconds", tool: "guide_cache_file", args: map[string]any{"path": "/m/p.txt", "content": "x", "mtime": 1714564800000}, fix: []string{"1714564800"}},
		{name: "cache_file ttl 0", tool: "guide_cache_file", args: map[string]any{"path": "/m/p.txt", "content": "x", "ttl_seconds": 0}, fix: []string{"minimum 1"}},
		{name: "cache_file if_revision 0", tool: "guide_cache_file", args: map[string]any{"path": "/m/a.txt", "content": "x", "if_revision": 0}, fix: []string{"minimum 1"}},
		{name: "cache_file if_absent on a file", tool: "guide_cache_file", args: map[string]any{"path": "/m/a.txt", "content": "x", "if_absent": true}, fix: []string{"if_revision"}},
		{name: "cache_file stale if_revision", tool: "guide_cache_file", args: map[string]any{"path": "/m/v.txt", "content": "x", "if_revision": revs[0]}, fix: []string{"read it again"}},
		{name: "cache_file empty path", tool: "guide_cache_file", args: map[string]any{"path": "", "content": "x"}, fix: []string{"path"}},
		{name: "cache_file over a directory", tool: "guide_cache_file", args: map[string]any{"path": "/m/dir", "content": "x"}, fix: []string{"choose a path"}},
		{name: "cache_file below a file", tool: "guide_cache_file", args: map[string]any{"path": "/m/a.txt/x", "content": "x"}, fix: []string{"choose a path"}},
		{name: "cache_file path and filename", tool: "guide_cache_file", args: map[string]any{"path": "/m/p.txt", "filename": "p.txt", "content": "x"}, fix: []string{"either|not both"}},
		{name: "cache_file unknown argument", tool: "guide_cache_file", args: map[string]any{"path": "/m/p.txt", "content": "x", "overwrite": true}, fix: []string{"overwrite"}},
		{name: "cache_file escape", tool: "guide_cache_file", args: map[string]any{"path": "../../etc/passwd", "content": "x"}, fix: []string{"inside the depot"}},
		// guide_cache_files
		{name: "cache_files empty", tool: "guide_cache_files", args: map[string]any{"files": []any{}}, fix: []string{"files"}},
		{name: "cache_files duplicate path", tool: "guide_cache_files", args: map[string]any{"files": []any{map[string]any{"path": "/m/d.txt", "content": "1"}, map[string]any{"path": "/m/d.txt", "content": "2"}}}, fix: []string{"/m/d.txt"}},
		{name: "cache_files files as an object", tool: "guide_cache_files", args: map[string]any{"files": map[string]any{"path": "/m/d.txt", "content": "1"}}, fix: []string{"array"}},
		{name: "cache_files at a mount path", tool: "guide_cache_files", args: map[string]any{"files": []any{map[string]any{"path": mnt + "/m/many.txt", "content": "1"}}}, fix: []string{`"/m/many.txt"`}, accept: true},
		// guide_read_file
		{name: "read_file chunk beyond count", tool: "guide_read_file", args: map[string]any{"path": "/m/c.bin", "upload_id": "u1", "chunk_index": 2, "chunk_count": 2, "content": "eA==", "encoding": "base64"}, fix: []string{"chunk_index"}},
		{name: "read_file chunk without upload_id", tool: "guide_read_file", args: map[string]any{"path": "/m/c.bin", "chunk_index": 0, "chunk_count": 2, "content": "eA==", "encoding": "base64"}, fix: []string{"upload_id"}},
		{name: "read_file at a mount path", tool: "guide_read_file", args: map[string]any{"path": mnt + "/m/ph/pushed.bin", "content": "0123456789"}, fix: []string{`"/m/ph/pushed.bin"`}, accept: true},
		// guide_list_directory
		{name: "list_directory symlink entry", tool: "guide_list_directory", args: map[string]any{"path": "/m/l", "entries": []any{map[string]any{"name": "x", "type": "symlink"}}}, fix: []string{"file", "directory"}},
		{name: "list_directory entry name ..", tool: "guide_list_directory", args: map[string]any{"path": "/m/l", "entries": []any{map[string]any{"name": "..", "type": "file"}}}, fix: []string{"inside the depot|name"}},
		{name: "list_directory over a file", tool: "guide_list_directory", args: map[string]any{"path": "/m/a.txt", "entries": []any{map[string]any{"name": "x", "type": "file"}}}, fix: []string{"choose a path"}},
		{name: "list_directory at a mount path", tool: "guide_list_directory", args: map[string]any{"path": mnt + "/m/l2", "entries": []any{map[string]any{"name": "x", "type": "file", "size": 1}}}, fix: []string{`"/m/l2"`}, accept: true},
		// guide_snapshot
		{name: "snapshot taken name", tool: "guide_snapshot", args: map[string]any{"action": "create", "name": "snap1"}, fix: []string{"another name", "delete"}},
		{name: "snapshot delete unknown", tool: "guide_snapshot", args: map[string]any{"action": "delete", "name": "nosuch"}, fix: []string{"action list|\"list\""}},
		{name: "snapshot without action", tool: "guide_snapshot", args: map[string]any{"name": "s2"}, fix: []string{"create, list or delete"}},
		{name: "snapshot unknown action", tool: "guide_snapshot", args: map[string]any{"action": "take", "name": "s2"}, fix: []string{"create"}},
		{name: "snapshot name with slash", tool: "guide_snapshot", args: map[string]any{"action": "create", "name": "a/b"}, fix: []string{"A-Z a-z 0-9"}},
		{name: "snapshot ttl on list", tool: "guide_snapshot", args: map[string]any{"action": "list", "ttl_seconds": 60}, fix: []string{"action create"}},
		{name: "snapshot at a mount path", tool: "guide_snapshot", args: map[string]any{"action": "create", "name": "s3", "path": mnt + "/m/dir"}, fix: []string{`"/m/dir"`}, accept: true},
		// guide_file_history
		{name: "file_history of a directory", tool: "guide_file_history", args: map[string]any{"path": "/m/dir"}, fix: []string{"is a directory", "file"}},
		{name: "file_history of nothing", tool: "guide_file_history", args: map[string]any{"path": "/m/none.txt"}, fix: []string{"guide_cache_file|path"}},
		{name: "file_history at a mount path", tool: "guide_file_history", args: map[string]any{"path": mnt + "/m/v.txt"}, fix: []string{`"/m/v.txt"`}, accept: true},
		// guide_restore
		{name: "restore a directory", tool: "guide_restore", args: map[string]any{"path": "/m/dir", "snapshot": "snap1"}, fix: []string{"only files", "once for each file"}},
		{name: "restore a directory at a revision", tool: "guide_restore", args: map[string]any{"path": "/m/dir", "revision": revs[0]}, fix: []string{"only files"}},
		{name: "restore a revision no longer kept", tool: "guide_restore", args: map[string]any{"path": "/m/v.txt", "revision": gone}, fix: []string{"kept:", "guide_file_history"}},
		{name: "restore a future revision", tool: "guide_restore", args: map[string]any{"path": "/m/v.txt", "revision": current}, fix: []string{"kept:"}},
		{name: "restore revision and snapshot", tool: "guide_restore", args: map[string]any{"path": "/m/v.txt", "revision": revs[3], "snapshot": "snap1"}, fix: []string{"exactly one"}},
		{name: "restore neither", tool: "guide_restore", args: map[string]any{"path": "/m/v.txt"}, fix: []string{"exactly one"}},
		{name: "restore unknown snapshot", tool: "guide_restore", args: map[string]any{"path": "/m/v.txt", "snapshot": "nosuch"}, fix: []string{"action list"}},
		{name: "restore outside the snapshot", tool: "guide_restore", args: map[string]any{"path": "/elsewhere.txt", "snapshot": "snap1"}, fix: []string{"/m"}},
		{name: "restore identical content", tool: "guide_restore", args: map[string]any{"path": "/m/a.txt", "snapshot": "snap1"}, fix: []string{"unchanged"}, accept: true, same: true},
		// other guide tools
		{name: "drop_uploads without arguments", tool: "guide_drop_uploads", args: map[string]any{}, fix: []string{"upload_ids", "idle_seconds"}},
		{name: "pending_requests unknown argument", tool: "guide_pending_requests", args: map[string]any{"path": "/m"}, fix: []string{"path"}},
		{name: "begin_upload negative size", tool: "guide_begin_upload", args: map[string]any{"path": "/m/big.bin", "size": -1}, fix: []string{"size"}},
		// provider
		{name: "provider read_file of a directory", tool: "read_file", args: map[string]any{"file_path": "/m/dir"}, fix: []string{"list_directory"}},
		{name: "provider read_file of a placeholder", tool: "read_file", args: map[string]any{"file_path": "/m/ph/later.bin"}, fix: []string{"guide_pending_requests|guide_read_file"}},
		{name: "provider read_file missing", tool: "read_file", args: map[string]any{"file_path": "/m/none.txt"}, fix: []string{"list_directory|find_files"}},
		{name: "provider read_file under another mount", tool: "read_file", args: map[string]any{"file_path": "/mnt/depot/m/a.txt"}, fix: []string{`"/m/a.txt"`}},
		{name: "provider read_file unknown encoding", tool: "read_file", args: map[string]any{"file_path": "/m/a.txt", "encoding": "klingon"}, fix: []string{"utf-8"}},
		{name: "provider read_file_binary max_size word", tool: "read_file_binary", args: map[string]any{"file_path": "/m/a.txt", "max_size": "big"}, fix: []string{"integer"}},
		{name: "provider list_directory of a file", tool: "list_directory", args: map[string]any{"directory_path": "/m/a.txt"}, fix: []string{"read_file|get_file_stats"}},
		{name: "provider hash unknown algorithm", tool: "calculate_file_hash", args: map[string]any{"file_path": "/m/a.txt", "algorithm": "crc32"}, fix: []string{"sha256"}},
		{name: "provider find_files patterns as a string", tool: "find_files", args: map[string]any{"directory_path": "/m", "patterns": "*.txt"}, fix: []string{"array"}},
		{name: "provider get_file_stats missing", tool: "get_file_stats", args: map[string]any{"path": "/m/none.txt"}, fix: []string{"list_directory|find_files"}},
		{name: "provider get_file_stats with file_path", tool: "get_file_stats", args: map[string]any{"file_path": "/m/a.txt"}, fix: []string{"accepted: path"}},
		{name: "provider file_exists without path", tool: "file_exists", args: map[string]any{}, fix: []string{"path: required"}},
		// fs
		{name: "fs read of a directory", tool: "read", args: map[string]any{"path": "m/dir"}, fix: []string{"list"}},
		{name: "fs read of a placeholder", tool: "read", args: map[string]any{"path": "m/ph/later.bin"}, fix: []string{"guide_pending_requests|guide_read_file"}},
		{name: "fs read missing", tool: "read", args: map[string]any{"path": "m/none.txt"}, fix: []string{"list"}},
		{name: "fs read at a revision no longer kept", tool: "read", args: map[string]any{"path": "m/v.txt", "revision": gone}, fix: []string{"not kept", "kept:"}},
		{name: "fs read beyond the current revision", tool: "read", args: map[string]any{"path": "m/v.txt", "revision": current}, fix: []string{"current revision"}},
		{name: "fs read end before start", tool: "read", args: map[string]any{"path": "m/a.txt", "start_line": 3, "end_line": 1}, fix: []string{"inclusive"}},
		{name: "fs read under another mount", tool: "read", args: map[string]any{"path": "/mnt/depot/m/a.txt"}, fix: []string{`"m/a.txt"|"/m/a.txt"`}},
		{name: "fs read at the mount path", tool: "read", args: map[string]any{"path": mnt + "/m/a.txt"}, fix: []string{`"m/a.txt"|"/m/a.txt"`}},
		{name: "fs write at the mount path", tool: "write", args: map[string]any{"path": mnt + "/m/w.txt", "content": "x"}, fix: []string{`"m/w.txt"|"/m/w.txt"`}},
		{name: "fs write encoding latin1", tool: "write", args: map[string]any{"path": "m/w.txt", "content": "x", "encoding": "latin1"}, fix: []string{"base64"}},
		{name: "fs mkdir over a file", tool: "mkdir", args: map[string]any{"path": "m/a.txt"}, fix: []string{"already exists|another"}},
		{name: "fs delete non-empty directory", tool: "delete", args: map[string]any{"path": "m/dir"}, fix: []string{"recursive"}},
		{name: "fs delete the root", tool: "delete", args: map[string]any{"path": "/", "recursive": true}, fix: []string{"root"}},
		{name: "fs copy onto itself", tool: "copy", args: map[string]any{"source": "m/a.txt", "destination": "/m/a.txt"}, fix: []string{"inside the source"}},
		{name: "fs copy onto an existing file", tool: "copy", args: map[string]any{"source": "m/a.txt", "destination": "m/v.txt"}, fix: []string{"overwrite"}},
		{name: "fs move into itself", tool: "move", args: map[string]any{"source": "m/dir", "destination": "m/dir/inner"}, fix: []string{"inside|below|into"}},
		{name: "fs search bad regex", tool: "search", args: map[string]any{"root_path": "m", "pattern": "(", "regex": true}, fix: []string{"regex|regular expression"}},
		{name: "fs list of a file", tool: "list", args: map[string]any{"path": "m/a.txt"}, fix: []string{"read|info"}},
		{name: "fs list at the mount path", tool: "list", args: map[string]any{"path": mnt + "/m"}, fix: []string{`"m"|"/m"`}},
		{name: "fs info revision argument", tool: "info", args: map[string]any{"path": "m/a.txt", "revision": 1}, fix: []string{"revision"}},
	}

	var internal, silentMount, noFix, refused int
	for _, tc := range cases {
		before := depotRevision(d)
		r, err := callAny(d, tc.tool, tc.args)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		t.Logf("%s: %s", tc.name, r.raw)
		if r.internal {
			internal++
			t.Errorf("%s: internal error: %s", tc.name, r.text)
		}
		missing := missingFixes(r.text, tc.fix)
		switch {
		case tc.accept && r.isError:
			t.Errorf("%s: refused, want it accepted: %s", tc.name, r.text)
		case tc.accept:
			if after := depotRevision(d); tc.same && after != before {
				t.Errorf("%s: the call changed the depot: revision %d, then %d", tc.name, before, after)
			}
			if len(missing) > 0 {
				if usesMount(tc.args, mnt) {
					silentMount++
				}
				t.Errorf("%s: accepted without saying %q: %s", tc.name, missing, r.text)
			}
		case !r.isError:
			if usesMount(tc.args, mnt) {
				silentMount++
			}
			t.Errorf("%s: accepted, want a refusal: %s", tc.name, r.text)
		default:
			refused++
			if len(missing) > 0 {
				noFix++
				t.Errorf("%s: the refusal does not say %q: %s", tc.name, missing, r.text)
			}
			if after := depotRevision(d); after != before {
				t.Errorf("%s: the refused call changed the depot: revision %d, then %d", tc.name, before, after)
			}
		}
	}
	for _, p := range []string{"/m/new.txt", "/m/many.txt", "/m/ph/pushed.bin", "/m/l2/x", "/.snapshots/s3/b.txt"} {
		if _, err := os.Stat(d.path(p)); err != nil {
			t.Errorf("a call at the mount path did not reach the depot path %s: %v", p, err)
		}
	}
	// A mount path taken literally would have put the mount's own path
	// inside the depot.
	if _, err := os.Stat(filepath.Join(mnt, mnt)); err == nil {
		silentMount++
		t.Errorf("a mount path was stored inside the depot at %s", mnt)
	}
	t.Logf("%d mistaken calls: %d refused, %d internal errors, %d mount paths accepted silently, %d refusals without the fix named",
		len(cases), refused, internal, silentMount, noFix)
	if len(cases) < 60 {
		t.Errorf("only %d cases", len(cases))
	}
}

// texts returns the strings in v, a decoded JSON value, in no particular
// order: what an agent reads of a reply, without JSON's escapes.
func texts(v any, out []string) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case map[string]any:
		for _, x := range v {
			out = texts(x, out)
		}
	case []any:
		for _, x := range v {
			out = texts(x, out)
		}
	}
	return out
}

// depotRevision is the depot's current revision: any change moves it.
// (A walk of the mount would wait on the placeholders the table reads.)
func depotRevision(d *daemon) uint64 {
	d.t.Helper()
	return uint64(d.mustCall("guide_cache_stats", map[string]any{}).Data["revision"].(float64))
}

// missingFixes returns the entries of fix that text does not contain (an
// entry holds alternatives separated by "|").
func missingFixes(text string, fix []string) []string {
	var missing []string
	for _, f := range fix {
		found := false
		for alt := range strings.SplitSeq(f, "|") {
			found = found || strings.Contains(text, alt)
		}
		if !found {
			missing = append(missing, f)
		}
	}
	return missing
}

// usesMount reports whether a string argument, at any depth, names a path
// under the mount point.
func usesMount(args any, mnt string) bool {
	switch v := args.(type) {
	case string:
		return strings.HasPrefix(v, mnt)
	case map[string]any:
		for _, x := range v {
			if usesMount(x, mnt) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if usesMount(x, mnt) {
				return true
			}
		}
	}
	return false
}
