package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResourceNotFoundError reads a missing depot:/// resource and one of
// a foreign scheme through the real binary with the official Go SDK
// client, over HTTP and stdio, on a revision with sessions and on
// 2026-07-28: each answer is a JSON-RPC error -32602 whose message names
// the URI and whose data is {"uri": URI} (SEP-2164), the session goes on
// working, and the depot is unchanged (same resources, same files in the
// mount, the missing file still missing).
func TestResourceNotFoundError(t *testing.T) {
	t.Parallel()
	for _, tr := range []transportKind{overHTTP, overStdio} {
		for _, version := range []string{"2025-06-18", "2026-07-28"} {
			t.Run(string(tr)+"/"+version, func(t *testing.T) {
				cs, mount, _ := sdkConnect(t, tr, version)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				if env, err := sdkCall(t, ctx, cs, "guide_cache_file", map[string]any{"path": "/nf/present.txt", "content": "here"}); err != nil || !env.Success {
					t.Fatalf("guide_cache_file: %+v, %v", env.Error, err)
				}
				before := depotState(t, ctx, cs, mount)

				for _, uri := range []string{"depot:///nf/missing.txt", "file:///etc/passwd", "https://example.com/x"} {
					res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
					var rpcErr *jsonrpc.Error
					if !errors.As(err, &rpcErr) {
						t.Fatalf("resources/read %s: %+v, %v; want a JSON-RPC error", uri, res, err)
					}
					if rpcErr.Code != -32602 {
						t.Errorf("resources/read %s: code %d, want -32602 (invalid params)", uri, rpcErr.Code)
					}
					if !strings.Contains(rpcErr.Message, uri) || !strings.Contains(rpcErr.Message, "not found") {
						t.Errorf("resources/read %s: message %q does not name the URI as not found", uri, rpcErr.Message)
					}
					var data map[string]any
					if err := json.Unmarshal(rpcErr.Data, &data); err != nil || len(data) != 1 || data["uri"] != uri {
						t.Errorf("resources/read %s: data %s, want {\"uri\": %q}", uri, rpcErr.Data, uri)
					}
				}

				if after := depotState(t, ctx, cs, mount); !slices.Equal(after, before) {
					t.Errorf("the depot changed:\nbefore %q\nafter  %q", before, after)
				}
				if _, err := os.Stat(filepath.Join(mount, "nf", "missing.txt")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("missing.txt in the mount after the failed read: %v", err)
				}
				read, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "depot:///nf/present.txt"})
				if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "here" {
					t.Fatalf("resources/read after the errors: %+v, %v", read, err)
				}
			})
		}
	}
}

// depotState is what the depot holds as a client and the host see it: the
// resource URIs listed and every file in the mount with its content.
func depotState(t *testing.T, ctx context.Context, cs *sdk.ClientSession, mount string) []string {
	t.Helper()
	var state []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		state = append(state, "resource "+r.URI)
	}
	err := filepath.WalkDir(mount, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		state = append(state, "file "+p+" "+string(b))
		return err
	})
	if err != nil {
		t.Fatalf("walking the mount: %v", err)
	}
	return state
}
