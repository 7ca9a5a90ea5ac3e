package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkVersions are the protocol revisions the official Go SDK client is
// run on; it negotiates the last by default.
var sdkVersions = []string{"2025-06-18", "2025-11-25", "2026-07-28"}

// sdkConnect connects the official Go SDK client (github.com/
// modelcontextprotocol/go-sdk) to a fresh depotfs over transport tr on
// protocol version, and returns the session, the depotfs mount and the
// channel of the resource updates it is told about.
func sdkConnect(t *testing.T, tr transportKind, version string) (*sdk.ClientSession, string, <-chan string) {
	t.Helper()
	updates := make(chan string, 16)
	client := sdk.NewClient(&sdk.Implementation{Name: "depotfs-gosdk-test", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			select {
			case updates <- req.Params.URI:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var transport sdk.Transport
	var mount string
	switch tr {
	case overHTTP:
		d := startDaemon(t, daemonConfig{transport: overHTTP, noInit: true})
		transport, mount = &sdk.StreamableClientTransport{Endpoint: d.url, MaxRetries: -1}, d.mount
	case overStdio:
		dir := t.TempDir()
		mount = filepath.Join(dir, "mnt")
		cmd := exec.Command(depotfsBin, "serve", "--stdio", "--db", filepath.Join(dir, "depot.db"), "--mount", mount)
		logs := &lockedBuffer{}
		cmd.Stderr = logs
		transport = &sdk.CommandTransport{Command: cmd}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("depotfs log:\n%s", tail(logs.String(), 30))
			}
			if isMounted(mount) {
				t.Errorf("depotfs left %s mounted; detaching it", mount)
				_ = syscall.Unmount(mount, syscall.MNT_DETACH)
			}
		})
	}
	cs, err := client.Connect(ctx, transport, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %s, want %s", got, version)
	}
	waitFor(t, 10*time.Second, "mount to appear", func() bool { return isMounted(mount) })
	return cs, mount, updates
}

// sdkCall calls a guide tool through the SDK and returns its envelope.
func sdkCall(t *testing.T, ctx context.Context, cs *sdk.ClientSession, tool string, args map[string]any) (envelope, error) {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return envelope{}, err
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s: structured content %s: %v", tool, raw, err)
	}
	if res.IsError == env.Success {
		t.Errorf("%s: isError %v, success %v", tool, res.IsError, env.Success)
	}
	return env, nil
}

// TestGoSDKClient drives depotfs with the official Go SDK as a second
// client, over HTTP and stdio on each protocol revision: the default tools
// listed and called, resources listed and read, a subscription notified of
// a change, and a cancelled call (notifications/cancelled, which the SDK
// sends without _meta) that leaves the session usable.
func TestGoSDKClient(t *testing.T) {
	t.Parallel()
	for _, tr := range []transportKind{overHTTP, overStdio} {
		for _, version := range sdkVersions {
			t.Run(string(tr)+"/"+version, func(t *testing.T) {
				cs, mount, updates := sdkConnect(t, tr, version)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()

				tools, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				var names []string
				for _, tool := range tools.Tools {
					names = append(names, tool.Name)
				}
				for _, want := range []string{"guide_cache_file", "guide_cache_files", "guide_list_directory", "guide_read_file",
					"guide_cache_stats", "guide_pending_requests", "read_file", "list_directory"} {
					if !slices.Contains(names, want) {
						t.Errorf("tools/list lacks %s: %v", want, names)
					}
				}

				must := func(tool string, args map[string]any) envelope {
					t.Helper()
					env, err := sdkCall(t, ctx, cs, tool, args)
					if err != nil || !env.Success {
						t.Fatalf("%s: %+v, %v", tool, env.Error, err)
					}
					return env
				}
				must("guide_cache_file", map[string]any{"path": "/sdk/a.txt", "content": "one"})
				must("guide_cache_files", map[string]any{"files": []map[string]any{{"path": "/sdk/b.txt", "content": "two"}}})
				// A provider-profile tool replies in its contract's shape.
				ls, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_directory", Arguments: map[string]any{"directory_path": "/sdk"}})
				if err != nil || ls.IsError || len(ls.Content) == 0 || !strings.Contains(mustJSON(t, ls.Content), "a.txt") {
					t.Errorf("list_directory: %+v, %v", ls, err)
				}
				must("guide_cache_stats", map[string]any{})
				if got, err := os.ReadFile(filepath.Join(mount, "sdk", "b.txt")); err != nil || string(got) != "two" {
					t.Errorf("b.txt through the mount: %q, %v", got, err)
				}

				list, err := cs.ListResources(ctx, nil)
				if err != nil {
					t.Fatalf("resources/list: %v", err)
				}
				found := false
				for _, r := range list.Resources {
					found = found || r.URI == "depot:///sdk/a.txt"
				}
				if !found {
					t.Errorf("resources/list lacks depot:///sdk/a.txt")
				}
				read, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "depot:///sdk/a.txt"})
				if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "one" {
					t.Fatalf("resources/read: %+v, %v", read, err)
				}

				if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "depot:///sdk/a.txt"}); err != nil {
					t.Fatalf("subscribe: %v", err)
				}
				// On 2026-07-28 the subscription is a subscriptions/listen
				// stream the SDK opens in the background: write until the
				// first update arrives.
				deadline := time.After(20 * time.Second)
			wait:
				for i := 0; ; i++ {
					must("guide_cache_file", map[string]any{"path": "/sdk/a.txt", "content": strings.Repeat("x", i+1)})
					select {
					case uri := <-updates:
						if uri != "depot:///sdk/a.txt" {
							t.Errorf("update for %s", uri)
						}
						break wait
					case <-time.After(200 * time.Millisecond):
					case <-deadline:
						t.Fatal("no notifications/resources/updated after changing a subscribed file")
					}
				}
				if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "depot:///sdk/a.txt"}); err != nil {
					t.Errorf("unsubscribe: %v", err)
				}

				// A call cancelled by its context: the SDK sends
				// notifications/cancelled; the session must survive it.
				short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
				_, err = sdkCall(t, short, cs, "guide_pending_requests", map[string]any{"wait_seconds": 20})
				stop()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("a call cancelled by its deadline: %v", err)
				}
				for i := range 3 {
					must("guide_cache_file", map[string]any{"path": "/sdk/after.txt", "content": strings.Repeat("y", i+1)})
				}
			})
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
