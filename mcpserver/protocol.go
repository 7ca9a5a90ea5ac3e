package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// peekBytes is how much of a POST body protocolEdge reads to recognise a
// notification; notifications are small, and a longer body (a tool call
// with content) is passed on untouched without being read twice.
const peekBytes = 64 << 10

// protocolEdge answers, in front of mcp-go's streamable HTTP transport,
// two cases mcp-go v1.2.1 gets wrong:
//
//   - A GET without Mcp-Session-Id on a revision with sessions would open
//     a stream bound to no session that never ends; it gets 400 at once.
//     (On 2026-07-28, which has no GET, mcp-go already answers 405.)
//   - mcp-go applies 2026-07-28's validation of a request's _meta to
//     notifications too, and answers a notification without
//     _meta.protocolVersion with 400 and a null id, which the official Go
//     SDK treats as fatal for its connection (it sends
//     notifications/cancelled without _meta, as the specification allows:
//     _meta is required on requests). Such a notification gets the
//     Mcp-Protocol-Version header's version in its _meta before mcp-go
//     sees it; anything else passes unchanged.
//   - A request other than initialize without Mcp-Session-Id, on a
//     revision with sessions, gets 404 "Invalid session ID" from mcp-go,
//     which tells a client its session expired (and to start a new one);
//     the transport specification (2025-03-26 to 2025-11-25) says 400:
//     the client forgot the header. It gets 400 saying so.
func protocolEdge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		version := r.Header.Get(mcp.HeaderProtocolVersion)
		modern, noSession := mcp.IsModernProtocol(version), r.Header.Get(mcp.HeaderSessionID) == ""
		if r.Method == http.MethodGet && !modern && noSession {
			http.Error(w, "Bad Request: a GET stream needs the Mcp-Session-Id header of an initialized session "+
				"(on protocol version "+mcp.ProtocolVersion20260728+", use subscriptions/listen instead)", http.StatusBadRequest)
			return
		}
		if r.Method != http.MethodPost || r.Body == nil || !modern && !noSession {
			next.ServeHTTP(w, r)
			return
		}
		head, err := io.ReadAll(io.LimitReader(r.Body, peekBytes+1))
		var rest io.Reader = r.Body
		if err != nil {
			// The body limit or the connection failed: let mcp-go
			// meet the same error and answer as it always does.
			rest = errReader{err}
		}
		whole := err == nil && len(head) <= peekBytes
		switch {
		case whole && !modern && needsSession(head):
			http.Error(w, "Bad Request: Mcp-Session-Id header is required: send the id the initialize response's "+
				"Mcp-Session-Id header gave, or initialize first", http.StatusBadRequest)
			return
		case whole && modern:
			if id, ok := unnamedCall(head); ok {
				// mcp-go would refuse it for its missing Mcp-Name
				// header, which says nothing of the missing name.
				writeRPCError(w, http.StatusBadRequest, id, mcp.INVALID_PARAMS, tool.MissingNameMessage("guide_cache_file"), nil)
				return
			}
			// Only a notification, whose method starts with
			// notifications/, can need a version.
			if !mayName(head, "notifications") {
				break
			}
			if fixed, ok := withMetaVersion(head, version); ok {
				head = fixed
				r.ContentLength = int64(len(head))
			}
		}
		r.Body = readCloser{io.MultiReader(bytes.NewReader(head), rest), r.Body}
		next.ServeHTTP(w, r)
	})
}

// unnamedCall returns the id of body if it is a tools/call request
// without a tool name.
func unnamedCall(body []byte) (json.RawMessage, bool) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != string(mcp.MethodToolsCall) || len(msg.ID) == 0 || msg.Params.Name != "" {
		return nil, false
	}
	return msg.ID, true
}

// needsSession reports whether body is a JSON-RPC request that only a
// session may send on a revision with sessions: a request (with an id)
// other than initialize, whose _meta does not name 2026-07-28 or later
// (which has no sessions). Notifications and responses are left to mcp-go.
func needsSession(body []byte) bool {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || len(msg.ID) == 0 || string(msg.ID) == "null" || msg.Method == "" || msg.Method == string(mcp.MethodInitialize) {
		return false
	}
	var version string
	_ = json.Unmarshal(msg.Params.Meta[mcp.MetaKeyProtocolVersion], &version)
	return !mcp.IsModernProtocol(version)
}

// withMetaVersion returns body with params._meta's protocol version set to
// version, if body is a single notification without one.
func withMetaVersion(body []byte, version string) ([]byte, bool) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return nil, false
	}
	var method string
	if _, hasID := msg["id"]; hasID || json.Unmarshal(msg["method"], &method) != nil || !strings.HasPrefix(method, "notifications/") {
		return nil, false
	}
	params := map[string]json.RawMessage{}
	if raw, ok := msg["params"]; ok && json.Unmarshal(raw, &params) != nil {
		return nil, false
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return nil, false
	}
	if _, ok := meta[mcp.MetaKeyProtocolVersion]; ok {
		return nil, false
	}
	meta[mcp.MetaKeyProtocolVersion], _ = json.Marshal(version)
	params["_meta"], _ = json.Marshal(meta)
	msg["params"], _ = json.Marshal(params)
	out, err := json.Marshal(msg)
	return out, err == nil
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
