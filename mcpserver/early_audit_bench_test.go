package mcpserver_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store/bolt"
)

// afterCommit hides a log's early records from the server: every record is
// then written after its write commits, as before they existed.
type afterCommit struct{ mcpserver.Auditor }

// BenchmarkCacheFileAudited stores one small file per guide_cache_file
// call, 8 calls in flight, on a bolt store and an audit log on disk, with
// the record written after the write's commit and while it commits, in
// one process: the difference is the log's fsync taken out of the series.
//
//	go test -run '^$' -bench CacheFileAudited -benchtime 2000x ./mcpserver/
func BenchmarkCacheFileAudited(b *testing.B) {
	for _, mode := range []string{"after-commit", "while-committing"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			st, err := bolt.Open(filepath.Join(dir, "depot.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			alog, err := audit.Open(filepath.Join(dir, "audit.log"), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { alog.Close() })
			var a mcpserver.Auditor = alog
			if mode == "after-commit" {
				a = afterCommit{alog}
			}
			srv := mcpserver.New(st, &mcpserver.Options{Audit: a,
				Settings: mcpserver.Settings{MountPoint: testMount, Logger: slog.New(slog.DiscardHandler)}})
			b.Cleanup(func() { srv.Close() })
			h := &harness{t: b, srv: srv, ctx: testerCtx, logs: &syncBuffer{}}
			h.client = startClientAs(b, mustInProcess(b, srv), testerCtx)
			var n atomic.Int64
			b.SetParallelism(4) // 8 calls in flight on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					res, err := callTool(h, "guide_cache_file", map[string]any{
						"path": fmt.Sprintf("/bench/d%02d/f%06d.txt", i%100, i), "content": fmt.Sprintf("file %d\n", i)})
					if err != nil || res.IsError {
						b.Errorf("call %d: %+v, %v", i, res, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "files/s")
		})
	}
}
