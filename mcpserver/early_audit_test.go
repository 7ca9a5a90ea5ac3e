package mcpserver_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// commitFailing is a bolt store whose Put, while fail is set, runs as far
// as the commit (its commit hook is called with the result the write would
// have) and then fails as a commit on a full disk does.
type commitFailing struct {
	*bolt.Store
	fail atomic.Bool
}

// errCommit is the failure of a commit of commitFailing.
var errCommit = errors.New("write depot.db: no space left on device")

func (s *commitFailing) Put(ctx context.Context, req store.PutRequest) (store.PutResult, error) {
	if !s.fail.Load() {
		return s.Store.Put(ctx, req)
	}
	if h := store.CommitHookOf(ctx); h != nil {
		if ended := h([]store.PutResult{{Status: store.StatusCreated, Entry: store.Entry{Path: req.Path, Size: int64(len(req.Data))}}}); ended != nil {
			ended(errCommit)
		}
	}
	return store.PutResult{}, errCommit
}

// TestRecordWrittenWhileCommitting: guide_cache_file's record is written
// while its write commits, one record a call, checkpointed before the
// reply; when the commit then fails, the reply is an error and a second
// record, amending the first, says the call failed.
func TestRecordWrittenWhileCommitting(t *testing.T) {
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logPath := filepath.Join(dir, "audit.log")
	alog, err := audit.Open(logPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alog.Close() })
	fs := &commitFailing{Store: st}
	srv := mcpserver.New(fs, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount}, Audit: alog})
	t.Cleanup(func() { srv.Close() })
	h := &harness{t: t, srv: srv, ctx: testerCtx, logs: &syncBuffer{}}
	h.client = startClientAs(t, mustInProcess(t, srv), testerCtx)

	if res, err := callTool(h, "guide_cache_file", map[string]any{"path": "/w/ok.txt", "content": "stored\n"}); err != nil || res.IsError {
		t.Fatalf("stored call: %+v, %v", res, err)
	}
	rep, err := audit.Verify(logPath)
	if err != nil || rep.Records != 1 || rep.Checkpoint != 1 {
		t.Fatalf("after one acknowledged write: Verify = %+v, %v; want one record, checkpointed", rep, err)
	}

	fs.fail.Store(true)
	res, err := callTool(h, "guide_cache_file", map[string]any{"path": "/w/lost.txt", "content": "never stored\n"})
	if err != nil || !res.IsError {
		t.Fatalf("call whose commit failed: %+v, %v; want an error reply", res, err)
	}
	recs := auditRecords(t, logPath)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3: %+v", len(recs), recs)
	}
	early, amend := recs[1], recs[2]
	if early.Status != "created" || early.Error != "" || early.Paths[0] != "/w/lost.txt" {
		t.Errorf("early record %+v; want the write as it was about to commit", early)
	}
	if amend.Amends != early.Seq || amend.Error == "" || amend.Status != "" || amend.RequestID != early.RequestID {
		t.Errorf("amending record %+v; want the failure of record %d's call", amend, early.Seq)
	}
	if rep, err := audit.Verify(logPath); err != nil || rep.Checkpoint != 3 || len(rep.Warnings) != 0 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// auditRecords reads every record of the audit log at path.
func auditRecords(t testing.TB, path string) []audit.Record {
	t.Helper()
	var recs []audit.Record
	if err := audit.Scan(path, func(r audit.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}
