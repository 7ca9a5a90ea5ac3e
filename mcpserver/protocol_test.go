package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver"
)

func post(t *testing.T, url string, header http.Header, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestGETWithoutSession: a GET stream without a session is refused at
// once (400 on the revisions with sessions, 405 on 2026-07-28), not left
// hanging.
func TestGETWithoutSession(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount}})
	url := httptestServer(t, h.srv)
	for version, want := range map[string]int{"": http.StatusBadRequest, sessionEra: http.StatusBadRequest, statelessEra: http.StatusMethodNotAllowed} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Accept", "text/event-stream")
		if version != "" {
			req.Header.Set(mcp.HeaderProtocolVersion, version)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("GET (version %q): %v", version, err)
		} else {
			res.Body.Close()
			if res.StatusCode != want {
				t.Errorf("GET (version %q): %d, want %d", version, res.StatusCode, want)
			}
		}
		cancel()
	}
}

// TestNotificationWithoutMeta: on 2026-07-28 a notification without _meta
// (as the official Go SDK sends notifications/cancelled) is accepted, and
// a request without it is still refused.
func TestNotificationWithoutMeta(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount}})
	url := httptestServer(t, h.srv)
	header := http.Header{}
	header.Set(mcp.HeaderProtocolVersion, statelessEra)
	header.Set(mcp.HeaderMethod, "notifications/cancelled")
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"timeout"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"_meta":{"x":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`,
	} {
		if code, reply := post(t, url, header, body); code != http.StatusAccepted {
			t.Errorf("%s: %d %s, want 202", body, code, reply)
		}
	}
	header.Set(mcp.HeaderMethod, "tools/list")
	if code, _ := post(t, url, header, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); code != http.StatusBadRequest {
		t.Errorf("a request without _meta: %d, want 400", code)
	}
}

// TestListenAcknowledgedFirst: every subscriptions/listen stream starts
// with its acknowledgement, also a listen that ends at once because
// nothing it asks for is served (depotfs sends no tools/list_changed).
// mcp-go's response could overtake the acknowledgement and drop it, in
// about one listen of four.
func TestListenAcknowledgedFirst(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount}})
	url := httptestServer(t, h.srv)
	header := http.Header{}
	header.Set(mcp.HeaderProtocolVersion, statelessEra)
	header.Set(mcp.HeaderMethod, string(mcp.MethodSubscriptionsListen))
	const body = `{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + statelessEra + `","io.modelcontextprotocol/clientCapabilities":{}},` +
		`"notifications":{"toolsListChanged":true}}}`
	for i := range 200 {
		code, reply := post(t, url, header, fmt.Sprintf(body, i))
		if code != http.StatusOK {
			t.Fatalf("listen %d: %d %s", i, code, reply)
		}
		var events []string
		for line := range strings.Lines(reply) {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok {
				events = append(events, data)
			}
		}
		if len(events) != 2 {
			t.Fatalf("listen %d: %d events, want the acknowledgement and the result:\n%s", i, len(events), reply)
		}
		var first struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(events[0]), &first); err != nil {
			t.Fatalf("listen %d: first event %s: %v", i, events[0], err)
		}
		if first.Method != string(mcp.MethodNotificationSubscriptionsAcknowledged) || first.Params.Meta[mcp.MetaKeySubscriptionID] != float64(i) {
			t.Fatalf("listen %d: first event %s, want the acknowledgement tagged with id %d", i, events[0], i)
		}
	}
}
