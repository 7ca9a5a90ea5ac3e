package lift_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver/internal/lift"
)

// long is a JSON string of n characters of content with escapes in it.
func long(n int) string {
	return `"` + strings.Repeat(`ab\"c\\`, n/7) + `"`
}

// arguments returns the params.arguments of a JSON-RPC body.
func arguments(t *testing.T, body []byte) json.RawMessage {
	t.Helper()
	var msg struct {
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("unmarshal %.200s: %v", body, err)
	}
	return msg.Params.Arguments
}

func TestLiftRestores(t *testing.T) {
	big, big2 := long(lift.MinLen+10), long(3*lift.MinLen)
	for _, tc := range []struct {
		name, body string
		lifted     int
	}{
		{"content", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"guide_read_file","arguments":{"path":"/a","content":` + big + `}}}`, 1},
		{"method last, white space", "{ \"params\" : { \"arguments\" : { \"content\" :\n" + big + " , \"n\": [1, 2.5e3, true, null] } , \"name\":\"x\"}, \"id\": \"7\", \"method\" : \"tools/call\" }", 1},
		{"nested and arrays", `{"method":"tools/call","params":{"arguments":{"files":[{"path":"/a","content":` + big + `},{"path":"/b","content":"short"},{"content":` + big2 + `}]}}}`, 2},
		{"duplicate keys", `{"method":"tools/call","params":{"arguments":{"content":` + big + `,"content":` + big2 + `}}}`, 2},
		{"long string elsewhere", `{"method":"tools/call","params":{"name":` + big + `,"_meta":{"x":` + big + `},"arguments":{}}}`, 0},
		{"not a tool call", `{"method":"prompts/get","params":{"arguments":{"content":` + big + `}}}`, 0},
		{"last method wins", `{"method":"tools/call","method":"prompts/get","params":{"arguments":{"content":` + big + `}}}`, 0},
		{"escaped method", `{"method":"tools\/call","params":{"arguments":{"content":` + big + `}}}`, 0},
		{"short", `{"method":"tools/call","params":{"arguments":{"content":"abc"}}}`, 0},
		{"batch", `[{"method":"tools/call","params":{"arguments":{"content":` + big + `}}}]`, 0},
		{"invalid JSON", `{"method":"tools/call","params":{"arguments":{"content":` + big + `}}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			out, tab, ok := lift.Lift(body)
			if ok != (tc.lifted > 0) {
				t.Fatalf("Lift ok = %v, want %v", ok, tc.lifted > 0)
			}
			if !ok {
				if !bytes.Equal(out, body) {
					t.Fatal("Lift changed a body it did not lift from")
				}
				return
			}
			if tab.Len() != tc.lifted {
				t.Errorf("lifted %d strings, want %d", tab.Len(), tc.lifted)
			}
			if !json.Valid(out) || len(out) >= lift.MinLen {
				t.Fatalf("lifted body (%d bytes) is not small valid JSON: %.300s", len(out), out)
			}
			if got, want := tab.Restore(arguments(t, out)), arguments(t, body); !bytes.Equal(got, want) {
				t.Fatalf("restored arguments differ:\n got %.300s\nwant %.300s", got, want)
			}
			if got := tab.Restore(out); !bytes.Equal(got, body) {
				t.Fatal("restoring the whole body does not give it back")
			}
		})
	}
}

// TestRestoreLeavesOthers: strings that only look like placeholders, and
// placeholders of another request, stay as they are.
func TestRestoreLeavesOthers(t *testing.T) {
	body := []byte(`{"method":"tools/call","params":{"arguments":{"content":` + long(lift.MinLen) + `}}}`)
	out, tab, ok := lift.Lift(body)
	if !ok {
		t.Fatal("nothing lifted")
	}
	_, other, _ := lift.Lift(body)
	for _, raw := range []string{
		`{"content":"depotfs-lifted-0123456789abcdef0123456789abcdef-0"}`,
		string(arguments(t, out)), // tab's placeholders, not other's
	} {
		if got := other.Restore([]byte(raw)); string(got) != raw {
			t.Errorf("Restore changed %.100q into %.100q", raw, got)
		}
	}
	if got := tab.Restore(arguments(t, out)); !bytes.Equal(got, arguments(t, body)) {
		t.Error("own table does not restore")
	}
	var nilTable *lift.Table
	if got := nilTable.Restore([]byte(`{"a":1}`)); string(got) != `{"a":1}` {
		t.Errorf("nil table changed the arguments: %s", got)
	}
	if lift.FromContext(context.Background()) != nil || lift.FromContext(lift.NewContext(context.Background(), tab)) != tab {
		t.Error("context round trip")
	}
}

// FuzzLift: whatever the body, Lift gives back the body untouched or a
// valid body from which Restore rebuilds the original exactly.
func FuzzLift(f *testing.F) {
	pad := strings.Repeat("x", lift.MinLen)
	f.Add(`{"method":"tools/call","params":{"arguments":{"content":"`, `"}}}`)
	f.Add(`{"method":"tools/call","params":{"arguments":{"files":[{"content":"\"`, `"}, {"b": "\\"}]}}}`)
	f.Add(`{"params":{"arguments":["`, `",{"a":"\\"}]},"method":"tools/call"}`)
	f.Add(`{"method":"tools/call","params":{"arguments":{"content":"`, "\x01\"}}}")
	f.Add(`{"method":"tools/call","params":{"arguments":{"content":"`, `"`)
	f.Add(`{"method":"tools/call","params":{"arguments":{"content":"`, `"}}}}`)
	f.Add(`{"method":"tools/call","params":{"arguments":{"content":"`, `\"}}}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		body := []byte(a + b)
		if len(body) < lift.MinLen {
			body = []byte(a + pad + b)
		}
		out, tab, ok := lift.Lift(body)
		if !ok {
			if !bytes.Equal(out, body) {
				t.Fatal("Lift changed a body it did not lift from")
			}
			return
		}
		if !json.Valid(out) || !json.Valid(body) {
			t.Fatalf("lifted from a body that is not valid JSON, or into one: %.300s", out)
		}
		if got := tab.Restore(out); !bytes.Equal(got, body) {
			t.Fatalf("Restore does not rebuild the body:\n got %.300q\nwant %.300q", got, body)
		}
	})
}
