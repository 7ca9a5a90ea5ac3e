package rpcerr

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestFixes records an error for request 7 and checks that each writer
// swaps it into mcp-go's error response to 7 (as a JSON line, a JSON body
// and a server-sent event), once, and passes everything else through byte
// for byte: a result, an error to another id, and the same error again.
func TestFixes(t *testing.T) {
	const (
		errorTo7  = `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"resource x not found"}}`
		errorTo8  = `{"jsonrpc":"2.0","id":8,"error":{"code":-32603,"message":"depot failed"}}`
		resultTo9 = `{"jsonrpc":"2.0","id":9,"result":{"contents":[]}}`
		fixedTo7  = `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"resource x not found","data":{"uri":"x"}}}`
		event     = "event: message\ndata: "
	)
	record := func() *Fixes {
		f := New()
		ctx := NewContext(context.Background(), f)
		Set(ctx, float64(7), mcp.NewJSONRPCErrorDetails(mcp.INVALID_PARAMS, "resource x not found", map[string]string{"uri": "x"}))
		Set(context.Background(), float64(7), mcp.JSONRPCErrorDetails{}) // no Fixes in ctx: nothing
		return f
	}
	for _, tc := range []struct {
		name   string
		frame  func(msg string) string
		writer func(f *Fixes, buf *bytes.Buffer) (write func([]byte) (int, error))
	}{
		{"stdio", func(m string) string { return m + "\n" }, func(f *Fixes, buf *bytes.Buffer) func([]byte) (int, error) {
			return f.Writer(buf).Write
		}},
		{"http json", func(m string) string { return m + "\n" }, func(f *Fixes, buf *bytes.Buffer) func([]byte) (int, error) {
			rec := httptest.NewRecorder()
			rec.Body = buf
			return f.ResponseWriter(rec).Write
		}},
		{"http sse", func(m string) string { return event + m + "\n\n" }, func(f *Fixes, buf *bytes.Buffer) func([]byte) (int, error) {
			rec := httptest.NewRecorder()
			rec.Body = buf
			w := f.ResponseWriter(rec)
			if _, ok := w.(http.Flusher); !ok {
				t.Fatal("the response writer cannot flush: mcp-go would not stream")
			}
			return w.Write
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			write := tc.writer(record(), &buf)
			var want string
			for _, m := range []struct{ in, out string }{
				{resultTo9, resultTo9},
				{errorTo8, errorTo8},
				{errorTo7, fixedTo7},
				{errorTo7, errorTo7}, // used once
			} {
				in := tc.frame(m.in)
				if n, err := write([]byte(in)); n != len(in) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", in, n, err)
				}
				want += tc.frame(m.out)
			}
			if buf.String() != want {
				t.Errorf("written:\n%s\nwant:\n%s", buf.String(), want)
			}
		})
	}
}
