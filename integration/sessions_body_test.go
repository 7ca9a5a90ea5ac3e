package integration_test

import (
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkSessionBodiesRSS measures the growth of the server's resident
// memory after 40 sessions, with authentication on, each sent one 8 MiB
// request without Content-Length: a session keeps the credential that
// opened it, not its last request (which held the whole body), so the
// growth stays far below the 320 MiB those bodies are. Run it on the
// binary as shipped (-bench builds it without the race detector):
//
//	go test -run XXX -bench SessionBodiesRSS -benchtime 1x ./integration/
func BenchmarkSessionBodiesRSS(b *testing.B) {
	const sessions, size = 40, 8 << 20
	for range b.N {
		tokens := b.TempDir() + "/tokens.json"
		tok, _ := issueToken(b, tokens, "agent", "*:/:rw")
		d := startDaemon(b, daemonConfig{transport: overHTTP, client: clientAuth{bearer: tok}, args: []string{"--tokens", tokens}})
		before := rssMiB(b, d.cmd.Process.Pid)
		pad := strings.Repeat("p", size)
		for i := range sessions {
			st, id, body := rawSession(b, d.url, tok, initBody, int64(len(initBody)))
			if st != http.StatusOK {
				b.Fatalf("initialize %d: %d %s", i, st, body)
			}
			st, _, body = rawSession(b, d.url, tok, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+pad+`"}}`, -1,
				"Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-06-18")
			if st != http.StatusOK {
				b.Fatalf("8 MiB ping on session %d: %d %.200s", i, st, body)
			}
			runtime.GC() // this process's copies, not the server's
		}
		after := rssMiB(b, d.cmd.Process.Pid)
		b.Logf("%d sessions, each sent %d MiB without Content-Length: server RSS %.0f -> %.0f MiB (+%.0f)", sessions, size>>20, before, after, after-before)
		b.ReportMetric(after-before, "MiB-rss-growth")
		if grew := after - before; grew > float64(sessions*size>>20)/2 {
			b.Errorf("the server's RSS grew %.0f MiB; want well under the %d MiB the bodies would hold", grew, sessions*size>>20)
		}
	}
}

// BenchmarkSessionFloodRSS measures what 10,000 initializes of a token
// without grants, in every spelling, leave in the server: the sessions
// live (at most the cap) and the growth of its resident memory (goal:
// under 10 MB). Run it on the binary as shipped:
//
//	go test -run XXX -bench SessionFloodRSS -benchtime 1x ./integration/
func BenchmarkSessionFloodRSS(b *testing.B) {
	for range b.N {
		tokens := b.TempDir() + "/tokens.json"
		flooder, _ := issueToken(b, tokens, "flooder")
		admin, _ := issueToken(b, tokens, "admin", "*:/:rw")
		d := startDaemon(b, daemonConfig{transport: overHTTP, client: clientAuth{bearer: admin},
			args: []string{"--tokens", tokens, "--max-conns-per-addr", "0"}})
		before := rssMiB(b, d.cmd.Process.Pid)
		opened, refused, took := floodInitializes(b, d.url, flooder, 10000)
		held := liveSessions(b, d, admin)
		after := rssMiB(b, d.cmd.Process.Pid)
		b.Logf("10000 initializes in %v: %d opened, %d refused; sessions live after: %d; RSS %.1f -> %.1f MiB (+%.1f)",
			took, opened, refused, held, before, after, after-before)
		b.ReportMetric(after-before, "MiB-rss-growth")
		b.ReportMetric(float64(held), "sessions-held")
	}
}
