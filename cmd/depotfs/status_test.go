package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/fetch"
)

// statusServer serves a depot with some content over HTTP on loopback and
// returns its MCP URL.
func statusServer(t *testing.T) string {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), &bolt.Options{MaxStoreBytes: 10 << 30, MaxFileBytes: 100 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := fetch.New(st, &fetch.Options{Timeout: 30 * time.Second})
	t.Cleanup(func() { b.Close() })
	srv := mcpserver.New(st, &mcpserver.Options{Requests: b, Settings: mcpserver.Settings{MaxFileBytes: 100 << 20}})
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	for _, p := range []string{"/a", "/b"} {
		if _, err := st.Put(context.Background(), store.PutRequest{Path: p, Data: []byte("same bytes")}); err != nil {
			t.Fatal(err)
		}
	}
	return ts.URL
}

func TestStatus(t *testing.T) {
	url := statusServer(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"table", []string{"--url", url}, []string{"depotfs", url, "files", "max store size", "10GiB", "max file size", "100MiB", "fetch timeout", "30s", "upload ttl", "24h0m0s", "pending", "saved by dedup", "10 B"}},
		{"json", []string{"--url", url, "--json"}, []string{`"max_store_bytes": 10737418240`, `"fetch_timeout_seconds": 30`, `"enabled": true`, `"files": 2`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), append([]string{"status"}, tt.args...), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
			if tt.name == "json" {
				var st mcpserver.CacheStats
				if err := json.Unmarshal(stdout.Bytes(), &st); err != nil || st.Limits.MaxFileBytes != 100<<20 {
					t.Errorf("--json output does not decode: %v %+v", err, st)
				}
			}
		})
	}
}

func TestStatusFailures(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"nobody listening", []string{"--url", "http://127.0.0.1:1/mcp", "--timeout", "5s"}, 1, "127.0.0.1:1"},
		{"bad timeout", []string{"--timeout", "0s"}, 2, "--timeout"},
		{"stray argument", []string{"extra"}, 2, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"status"}, tt.args...), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}
