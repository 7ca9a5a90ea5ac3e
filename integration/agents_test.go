package integration_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// allProfiles serves every tool profile, so one daemon answers the guide,
// provider and fs spellings of the same mistake.
var allProfiles = []string{"--tools", "guide,provider,fs"}

// TestAgentEncodingSpellings: both spellings of UTF-8, in any case, are
// accepted by every tool that takes an encoding, and store the same bytes.
func TestAgentEncodingSpellings(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: allProfiles})
	fc := fsClient{d.client}
	for _, enc := range []string{"utf-8", "utf8", "UTF-8", "Utf8"} {
		p := "/enc/guide-" + enc + ".txt"
		d.mustCall("guide_cache_file", map[string]any{"path": p, "content": "héllo\n", "encoding": enc})
		env := d.mustCall("guide_cache_files", map[string]any{"files": []any{
			map[string]any{"path": "/enc/batch-" + enc + ".txt", "content": "héllo\n", "encoding": enc},
		}})
		if !env.Success {
			t.Errorf("guide_cache_files with encoding %q: %+v", enc, env.Error)
		}
		if err := fc.call("write", map[string]any{"path": "enc/fs-" + enc + ".txt", "content": "héllo\n", "encoding": enc}, nil); err != nil {
			t.Errorf("fs write with encoding %q: %v", enc, err)
		}
		var out struct {
			Content  string `json:"content"`
			Encoding string `json:"encoding"`
		}
		if err := fc.call("read", map[string]any{"path": "enc/fs-" + enc + ".txt", "encoding": enc}, &out); err != nil || out.Content != "héllo\n" {
			t.Errorf("fs read with encoding %q: %+v, %v", enc, out, err)
		}
		for _, f := range []string{p, "/enc/batch-" + enc + ".txt", "/enc/fs-" + enc + ".txt"} {
			if got, err := os.ReadFile(d.path(f)); err != nil || string(got) != "héllo\n" {
				t.Errorf("%s in the mount: %q, %v", f, got, err)
			}
		}
	}
	for _, enc := range []string{"BASE64", "Base64"} {
		d.mustCall("guide_cache_file", map[string]any{"path": "/enc/b64-" + enc, "content": "aGk=", "encoding": enc})
		if err := fc.call("write", map[string]any{"path": "enc/fsb64-" + enc, "content": "aGk=", "encoding": enc}, nil); err != nil {
			t.Errorf("fs write with encoding %q: %v", enc, err)
		}
	}
	before := snapshot(t, d.mount)
	env := d.call("guide_cache_file", map[string]any{"path": "/enc/bad.txt", "content": "x", "encoding": "utf16"})
	if env.Success || !strings.Contains(env.Error.Message, `"utf8"`) || !strings.Contains(env.Error.Message, `"utf-8"`) {
		t.Errorf("unknown encoding: %+v, want a refusal naming both spellings", env.Error)
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("refused call changed the depot:\n%s", diff)
	}
}

// TestAgentNumbersAsStrings: an integer argument sent as a string of
// decimal digits is accepted by every tool, and anything else in a string
// is refused with what to send.
func TestAgentNumbersAsStrings(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: allProfiles})
	fc := fsClient{d.client}
	d.mustCall("guide_cache_file", map[string]any{"path": "/num/ttl.txt", "content": "x", "ttl_seconds": "3600"})
	env := d.mustCall("guide_read_file", map[string]any{
		"path": "/num/chunked.txt", "upload_id": "num-1", "chunk_index": "0", "chunk_count": "1",
		"total_size": "5", "content": "hello", "sha256": sha256hex([]byte("hello")),
	})
	if got, err := os.ReadFile(d.path("/num/chunked.txt")); err != nil || string(got) != "hello" {
		t.Errorf("chunked upload with string numbers: %q, %v (%+v)", got, err, env.Data)
	}
	d.mustCall("guide_pending_requests", map[string]any{"wait_seconds": "0"})
	var out struct {
		Content string `json:"content"`
	}
	if err := fc.call("read", map[string]any{"path": "num/chunked.txt", "max_size": "2", "start_line": "0"}, &out); err != nil || out.Content != "he" {
		t.Errorf("fs read with string numbers: %+v, %v", out, err)
	}
	if err := fc.call("search", map[string]any{"root_path": "num", "pattern": "hello", "max_results": "1"}, nil); err != nil {
		t.Errorf("fs search with max_results \"1\": %v", err)
	}

	before := snapshot(t, d.mount)
	for _, v := range []string{"an hour", "1e3", "3600.5", ""} {
		env := d.call("guide_cache_file", map[string]any{"path": "/num/bad.txt", "content": "x", "ttl_seconds": v})
		if env.Success || env.Error.Type != "validation" || !strings.Contains(env.Error.Message, "decimal digits") {
			t.Errorf("ttl_seconds %q: %+v, want a validation error naming decimal digits", v, env.Error)
		}
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("refused calls changed the depot:\n%s", diff)
	}
}

// TestAgentHashAlgorithmSchema: the algorithm calculate_file_hash accepts in
// upper case is also accepted by its published input schema, so a client
// that validates arguments first sends the call.
func TestAgentHashAlgorithmSchema(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/hash/a.txt", "content": "abc"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := d.client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var schema json.RawMessage
	for _, tl := range list.Tools {
		if tl.Name == "calculate_file_hash" {
			schema = tl.RawInputSchema
			if schema == nil {
				schema, _ = json.Marshal(tl.InputSchema)
			}
		}
	}
	if schema == nil {
		t.Fatal("calculate_file_hash not listed")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("calculate_file_hash.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("calculate_file_hash.json")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"SHA256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		"MD5":    "900150983cd24fb0d6963f7d28e17f72",
		"SHA1":   "a9993e364706816aba3e25717850c26c9cd0d89d",
	}
	for alg, sum := range want {
		args := map[string]any{"file_path": "/hash/a.txt", "algorithm": alg}
		if err := sch.Validate(map[string]any{"file_path": "/hash/a.txt", "algorithm": alg}); err != nil {
			t.Errorf("the schema refuses algorithm %q, which the server accepts: %v", alg, err)
		}
		r, err := callTool(d.client, "calculate_file_hash", args)
		if err != nil || r.isError || !strings.Contains(r.text, sum) {
			t.Errorf("calculate_file_hash %s: %+v, %v; want %s", alg, r, err, sum)
		}
	}
}

// TestAgentErrorsSayHowToFix: the mistakes agents make with mtime, base64,
// tool names and host paths get a reply that says what to send instead, or
// are accepted with a warning naming what was stored; refusals change
// nothing.
func TestAgentErrorsSayHowToFix(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})

	t.Run("mtime as a string of seconds", func(t *testing.T) {
		if env := d.call("guide_cache_file", map[string]any{"path": "/fix/mtime.txt", "content": "x", "mtime": "1714564800"}); !env.Success {
			t.Fatalf("mtime \"1714564800\": %+v", env.Error)
		}
		fi, err := os.Stat(d.path("/fix/mtime.txt"))
		if err != nil || fi.ModTime().Unix() != 1714564800 {
			t.Errorf("mtime \"1714564800\" stored as %v, %v", fi, err)
		}
	})
	t.Run("white space in base64", func(t *testing.T) {
		if env := d.call("guide_cache_file", map[string]any{"path": "/fix/spaced.bin", "content": "aGVs bG8g\td29y\r\nbGQ=", "encoding": "base64"}); !env.Success {
			t.Fatalf("base64 with spaces: %+v", env.Error)
		}
		if got, err := os.ReadFile(d.path("/fix/spaced.bin")); err != nil || string(got) != "hello world" {
			t.Errorf("base64 with spaces stored %q, %v", got, err)
		}
	})

	before := snapshot(t, d.mount)
	refusals := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"mtime in milliseconds", map[string]any{"path": "/fix/ms.txt", "content": "x", "mtime": 1714564800000}, []string{"milliseconds", "1714564800"}},
		{"mtime in milliseconds as a string", map[string]any{"path": "/fix/ms.txt", "content": "x", "mtime": "1714564800000"}, []string{"milliseconds", "1714564800"}},
		{"URL-safe base64", map[string]any{"path": "/fix/url.bin", "content": base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff, 0xfe}), "encoding": "base64"}, []string{"URL-safe", "replace - with +"}},
		{"data: URL", map[string]any{"path": "/fix/data.bin", "content": "data:image/png;base64,iVBORw0KGgo=", "encoding": "base64"}, []string{`"data:image/png;base64,"`, "what follows the comma"}},
		{"text sent as base64", map[string]any{"path": "/fix/text.bin", "content": "hello!", "encoding": "base64"}, []string{`"!" at byte 5`, `encoding "utf-8"`}},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			env := d.call("guide_cache_file", tt.args)
			if env.Success || env.Error.Type != "validation" {
				t.Fatalf("got %+v, want a validation error", env.Error)
			}
			for _, w := range tt.want {
				if !strings.Contains(env.Error.Message, w) {
					t.Errorf("message %q does not say %q", env.Error.Message, w)
				}
			}
		})
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("refused calls changed the depot:\n%s", diff)
	}

	t.Run("unknown tool", func(t *testing.T) {
		// Over both transports: on HTTP, 2026-07-28 also checks the
		// Mcp-Name header, which a call without a name cannot send.
		stdio := startDaemon(t, daemonConfig{transport: overStdio})
		for name, want := range map[string]string{
			"cache_file":             `did you mean "guide_cache_file"`,
			"guide_cache_fille":      `did you mean "guide_cache_file"`,
			"Guide-Pending-Requests": `did you mean "guide_pending_requests"`,
			"frobnicate":             "guide_cache_file, guide_cache_files",
		} {
			for _, dd := range []*daemon{d, stdio} {
				_, err := dd.tryCall(name, map[string]any{"path": "/x", "content": "x"})
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("tools/call %q over %s: %v, want an error saying %s", name, dd.cfg.transport, err, want)
				}
			}
		}
		for _, dd := range []*daemon{d, stdio} {
			_, err := dd.tryCall("", map[string]any{"path": "/x", "content": "x"})
			if err == nil || !strings.Contains(err.Error(), "params.name") {
				t.Errorf("tools/call without a name over %s: %v, want an error naming params.name", dd.cfg.transport, err)
			}
		}
	})

	t.Run("host paths", func(t *testing.T) {
		for raw, stored := range map[string]string{`C:\Users\me\x.txt`: "/C:/Users/me/x.txt", "~/notes.txt": "/~/notes.txt"} {
			env := d.call("guide_cache_file", map[string]any{"path": raw, "content": "x"})
			if !env.Success {
				t.Fatalf("%s: %+v", raw, env.Error)
			}
			if env.Data["path"] != stored {
				t.Errorf("%s stored at %v, want %s", raw, env.Data["path"], stored)
			}
			if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], `"`+stored+`"`) {
				t.Errorf("%s: warnings %q, want one naming %s", raw, env.Warnings, stored)
			}
		}
		env := d.call("guide_cache_file", map[string]any{"path": "/plain/notes.txt", "content": "x"})
		if !env.Success || len(env.Warnings) != 0 {
			t.Errorf("a plain path got warnings %q", env.Warnings)
		}
	})
}

// TestSessionlessPostGets400: on a protocol revision with sessions, a
// request without Mcp-Session-Id gets 400 (the client forgot the header),
// not 404 (which tells a client its session expired).
func TestSessionlessPostGets400(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	post := func(version, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, d.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"guide_cache_stats","arguments":{}}}`
	for _, version := range []string{"2025-11-25", "2025-06-18", ""} {
		code, body := post(version, call)
		if code != http.StatusBadRequest || !strings.Contains(body, "Mcp-Session-Id") {
			t.Errorf("version %q: tools/call without a session: %d %q, want 400 naming Mcp-Session-Id", version, code, body)
		}
	}
	// initialize needs no session, and an unknown session is still 404.
	code, body := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if code != http.StatusOK {
		t.Errorf("initialize: %d %q", code, body)
	}
	req, _ := http.NewRequest(http.MethodPost, d.url, strings.NewReader(call))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", "mcp-session-not-issued")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: %d, want 404", resp.StatusCode)
	}
}
