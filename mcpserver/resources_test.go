package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func TestResourceURI(t *testing.T) {
	for _, tc := range []struct{ path, uri string }{
		{"/", "depot:///"},
		{"/workspace/app/main.go", "depot:///workspace/app/main.go"},
		{"/docs/a b/ü.txt", "depot:///docs/a%20b/%C3%BC.txt"},
		{"/q/what?#100%", "depot:///q/what%3F%23100%25"},
		{"/x/a+b=c,d;e@f:g~h_i-j.k", "depot:///x/a%2Bb%3Dc%2Cd%3Be%40f%3Ag~h_i-j.k"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if got := mcpserver.ResourceURI(tc.path); got != tc.uri {
				t.Errorf("ResourceURI(%q) = %q, want %q", tc.path, got, tc.uri)
			}
			if got, err := mcpserver.ParseResourceURI(tc.uri); err != nil || got != tc.path {
				t.Errorf("ParseResourceURI(%q) = %q, %v; want %q", tc.uri, got, err, tc.path)
			}
		})
	}
}

func TestParseResourceURI(t *testing.T) {
	for _, tc := range []struct {
		uri  string
		path string // "" when refused
		err  error
	}{
		{uri: "depot:///a//b/../c", path: "/a/c"},
		{uri: "DEPOT:///a", path: "/a"},
		{uri: "depot:///a%2fb", path: "/a/b"},
		{uri: "depot:///a+b@c", path: "/a+b@c"},
		{uri: "depot:///%e2%82%ac", path: "/€"},
		{uri: "depot:///€", err: mcpserver.ErrResourceURI},
		{uri: "depot:///a b", err: mcpserver.ErrResourceURI},
		{uri: "depot:///a\\b", err: mcpserver.ErrResourceURI},
		{uri: "depot:///dir/", path: "/dir"},
		{uri: "file:///etc/passwd", err: mcpserver.ErrResourceURI},
		{uri: "depot://host/a", err: mcpserver.ErrResourceURI},
		{uri: "depot:a", err: mcpserver.ErrResourceURI},
		{uri: "depot://", err: mcpserver.ErrResourceURI},
		{uri: "depot:///a?b", err: mcpserver.ErrResourceURI},
		{uri: "depot:///a?", err: mcpserver.ErrResourceURI},
		{uri: "depot:///a#b", err: mcpserver.ErrResourceURI},
		{uri: "depot:///a#", err: mcpserver.ErrResourceURI},
		{uri: "depot:///a%zz", err: mcpserver.ErrResourceURI},
		{uri: "depot:///../../etc", err: depotpath.ErrEscapes},
		{uri: "depot:///a%00b", err: depotpath.ErrInvalid},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			got, err := mcpserver.ParseResourceURI(tc.uri)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("ParseResourceURI = %q, %v; want an error wrapping %v", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.path {
				t.Fatalf("ParseResourceURI = %q, %v; want %q", got, err, tc.path)
			}
		})
	}
}

// put stores a file directly in the harness's store.
func (h *harness) put(p string, data []byte) store.Entry {
	h.t.Helper()
	res, err := h.st.Put(context.Background(), store.PutRequest{Path: p, Data: data, MTime: time.Unix(1714564800, 0)})
	if err != nil {
		h.t.Fatalf("Put %s: %v", p, err)
	}
	return res.Entry
}

// listAll collects the depot files of every page of resources/list (not
// the pending-requests resource, listed last) and the number of pages.
func listAll(t testing.TB, c *client.Client) ([]mcp.Resource, int) {
	t.Helper()
	var all []mcp.Resource
	var cursor mcp.Cursor
	for pages := 1; ; pages++ {
		req := mcp.ListResourcesRequest{}
		req.Params.Cursor = cursor
		res, err := c.ListResourcesByPage(testerCtx, req)
		if err != nil {
			t.Fatalf("ListResources page %d: %v", pages, err)
		}
		for _, r := range res.Resources {
			if strings.HasPrefix(r.URI, mcpserver.ResourceScheme+":") {
				all = append(all, r)
			}
		}
		if res.NextCursor == "" {
			return all, pages
		}
		cursor = res.NextCursor
		if pages > 10000 {
			t.Fatal("resources/list never ends")
		}
	}
}

// walkOrder sorts depot paths in the order resources/list gives: depth
// first, each directory's entries by name.
func walkOrder(paths []string) []string {
	out := slices.Clone(paths)
	slices.SortFunc(out, func(a, b string) int {
		return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/"))
	})
	return out
}

func TestResourcesListPagination(t *testing.T) {
	for _, pageSize := range []int{1, 7, 40, 41, 1000} {
		t.Run(fmt.Sprint(pageSize), func(t *testing.T) {
			t.Parallel() // each page size has its own server and store
			h := newHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, ResourcePageSize: pageSize}})
			var want []string
			for i := range 40 {
				// Names chosen so that depth-first order differs from a plain
				// sort of whole paths ("/a-c" < "/a/b" bytewise).
				p := []string{"/a/b%02d", "/a-c/f%02d", "/a/z/deep/f%02d", "/Z%02d", "/ü/%02d.txt"}[i%5]
				want = append(want, fmt.Sprintf(p, i))
			}
			for _, p := range want[:35] {
				h.put(p, []byte(p))
			}
			var decl []store.Declaration
			for _, p := range want[35:] {
				decl = append(decl, store.Declaration{Path: p, Kind: store.KindFile, Size: 10})
			}
			decl = append(decl, store.Declaration{Path: "/empty/dir", Kind: store.KindDir, Size: -1})
			if _, err := h.st.Declare(context.Background(), store.DeclareRequest{Entries: decl}); err != nil {
				t.Fatal(err)
			}
			want = walkOrder(want)

			got, pages := listAll(t, h.client)
			if wantPages := (len(want) + pageSize - 1) / pageSize; pages != wantPages {
				t.Errorf("%d pages, want %d", pages, wantPages)
			}
			var names []string
			for _, r := range got {
				names = append(names, r.Name)
				if r.URI != mcpserver.ResourceURI(r.Name) {
					t.Errorf("%s: uri %s", r.Name, r.URI)
				}
			}
			if !slices.Equal(names, want) {
				t.Fatalf("listed\n%q\nwant\n%q", names, want)
			}
			for _, r := range got {
				placeholder := r.Description != ""
				if r.Size == nil || placeholder && *r.Size != 10 || !placeholder && *r.Size != int64(len(r.Name)) {
					t.Errorf("%s: size %v", r.Name, r.Size)
				}
				if r.Annotations == nil || r.Annotations.LastModified == "" {
					t.Errorf("%s: no lastModified", r.Name)
				}
			}
		})
	}
}

// TestResourcesListCursorSurvivesChanges removes the file a cursor points
// at and adds files before and after it: the next page continues where the
// previous ended.
func TestResourcesListCursorSurvivesChanges(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, ResourcePageSize: 2}})
	for _, p := range []string{"/d/1", "/d/2", "/d/3", "/d/4"} {
		h.put(p, []byte("x"))
	}
	first, err := h.client.ListResourcesByPage(testerCtx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Resources) != 2 || first.Resources[1].Name != "/d/2" {
		t.Fatalf("first page %+v", first.Resources)
	}
	if err := h.st.Remove(context.Background(), store.RemoveRequest{Path: "/d/2"}); err != nil {
		t.Fatal(err)
	}
	h.put("/d/0", []byte("behind the cursor"))
	h.put("/d/25", []byte("ahead of the cursor"))
	req := mcp.ListResourcesRequest{}
	req.Params.Cursor = first.NextCursor
	next, err := h.client.ListResourcesByPage(testerCtx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Resources) != 2 || next.Resources[0].Name != "/d/25" || next.Resources[1].Name != "/d/3" {
		t.Fatalf("next page %+v", next.Resources)
	}
}

func TestResourcesListBadCursor(t *testing.T) {
	h := newHarness(t, nil)
	for _, cursor := range []string{"not base64!", base64.StdEncoding.EncodeToString([]byte("relative/path")), base64.StdEncoding.EncodeToString([]byte("/a//b"))} {
		req := mcp.ListResourcesRequest{}
		req.Params.Cursor = mcp.Cursor(cursor)
		_, err := h.client.ListResourcesByPage(testerCtx, req)
		if err == nil || !strings.Contains(err.Error(), "nextCursor of the previous page") {
			t.Errorf("cursor %q: %v, want an error explaining cursors", cursor, err)
		}
	}
}

func TestResourceTemplates(t *testing.T) {
	h := newHarness(t, nil)
	res, err := h.client.ListResourceTemplates(testerCtx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ResourceTemplates) != 1 || res.ResourceTemplates[0].URITemplate.Raw() != mcpserver.ResourceTemplate {
		t.Fatalf("templates %+v", res.ResourceTemplates)
	}
	if !strings.Contains(res.ResourceTemplates[0].Description, "percent-encoded") {
		t.Errorf("template description %q does not explain the encoding", res.ResourceTemplates[0].Description)
	}
}

func TestResourceRead(t *testing.T) {
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	png := append([]byte("\x89PNG\r\n\x1a\n"), allBytes...)
	for _, tc := range []struct {
		name, path string
		data       []byte
		mime       string
		text       bool
	}{
		{"go source", "/src/main.go", []byte("package main\n\nfunc main() {}\n"), "text/x-go", true},
		{"no extension, sniffed text", "/src/Makefile", []byte("all:\n\tgo build\n"), "text/plain", true},
		{"json", "/cfg/a.json", []byte(`{"a": "ü"}`), "application/json", true},
		{"svg is text", "/img/a.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), "image/svg+xml", true},
		{"empty", "/e/empty.txt", []byte{}, "text/plain", true},
		{"every byte value", "/bin/all.bin", allBytes, "application/octet-stream", false},
		{"png by extension", "/img/a.png", png, "image/png", false},
		{"png sniffed", "/img/noext", png, "image/png", false},
		{"latin-1 text is a blob", "/t/latin1.txt", []byte("caf\xe9\n"), "text/plain", false},
		{"NUL in text is a blob", "/t/nul.txt", []byte("a\x00b"), "text/plain", false},
		{"percent-encoded name", "/a b/ü?#.md", []byte("# title\n"), "text/markdown", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has its own server and store
			h := newHarness(t, nil)
			h.put(tc.path, tc.data)
			uri := mcpserver.ResourceURI(tc.path)
			req := mcp.ReadResourceRequest{}
			req.Params.URI = uri
			res, err := h.client.ReadResource(testerCtx, req)
			if err != nil {
				t.Fatalf("ReadResource %s: %v", uri, err)
			}
			if len(res.Contents) != 1 {
				t.Fatalf("%d contents", len(res.Contents))
			}
			var got []byte
			switch c := res.Contents[0].(type) {
			case mcp.TextResourceContents:
				if !tc.text {
					t.Errorf("served as text, want a blob")
				}
				if c.URI != uri || c.MIMEType != tc.mime {
					t.Errorf("uri %q mime %q, want %q %q", c.URI, c.MIMEType, uri, tc.mime)
				}
				got = []byte(c.Text)
			case mcp.BlobResourceContents:
				if tc.text {
					t.Errorf("served as a blob, want text")
				}
				if c.URI != uri || c.MIMEType != tc.mime {
					t.Errorf("uri %q mime %q, want %q %q", c.URI, c.MIMEType, uri, tc.mime)
				}
				if got, err = base64.StdEncoding.DecodeString(c.Blob); err != nil {
					t.Fatalf("blob: %v", err)
				}
			default:
				t.Fatalf("contents %T", c)
			}
			if !bytes.Equal(got, tc.data) {
				t.Errorf("read %q, want %q", got, tc.data)
			}

			list, _ := listAll(t, h.client)
			if len(list) != 1 || list[0].MIMEType != tc.mime {
				t.Errorf("resources/list says %+v, want mime %q as read says", list, tc.mime)
			}
		})
	}
}

func TestResourceReadRefused(t *testing.T) {
	h := newHarness(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount, MaxResourceBytes: 100}})
	h.put("/dir/small.txt", []byte("small"))
	h.put("/dir/big.txt", bytes.Repeat([]byte("x"), 101))
	if _, err := h.st.Declare(context.Background(), store.DeclareRequest{Entries: []store.Declaration{
		{Path: "/dir/later.txt", Kind: store.KindFile, Size: 5},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ uri, want string }{
		{"depot:///dir/missing.txt", "not found"},
		{"depot:///dir", "is a directory"},
		{"depot:///", "is a directory"},
		{"depot:///dir/later.txt", "content has not arrived"},
		{"depot:///dir/big.txt", "over the 100-byte limit"},
		{"depot:///dir/small.txt?x=1", "query or fragment"},
		{"depot:///../etc/passwd", "escape"},
		{"file:///etc/passwd", "not found"},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			req := mcp.ReadResourceRequest{}
			req.Params.URI = tc.uri
			res, err := h.client.ReadResource(testerCtx, req)
			if err == nil {
				t.Fatalf("read succeeded: %+v", res)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), h.dir) {
				t.Errorf("error %q reveals the host path %s", err, h.dir)
			}
		})
	}
	if logs := h.logs.String(); !strings.Contains(logs, `"tool":"resources/read"`) || !strings.Contains(logs, `"outcome":"not_found"`) ||
		!strings.Contains(logs, `"outcome":"limit"`) || !strings.Contains(logs, `"outcome":"validation"`) {
		t.Errorf("resource reads are not logged:\n%s", logs)
	}
}

// TestResourceReadErrorCodes reads resources that fail over the real HTTP
// and stdio transports and checks the JSON-RPC code of each error: -32602
// (invalid params, SEP-2164) for a resource that is not found, whatever its
// scheme, -32600 for a read the caller's grants refuse, and -32603 still for
// a failure that is the server's. The codes come from the rpcerr fix on
// the transports' writers; the message is still the resource code's.
func TestResourceReadErrorCodes(t *testing.T) {
	g, err := grant.Parse("*:/dir:r")
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []string{"http", "stdio"} {
		t.Run(tr, func(t *testing.T) {
			h := newHarnessOver(t, &mcpserver.Options{LocalGrants: []grant.Grant{g}, Settings: mcpserver.Settings{MountPoint: testMount, MaxResourceBytes: 100}}, tr)
			h.put("/dir/small.txt", []byte("small"))
			h.put("/dir/big.txt", bytes.Repeat([]byte("x"), 101))
			h.put("/secret/key.txt", []byte("secret"))
			for _, tc := range []struct {
				uri, want string
				code      error
			}{
				{"depot:///dir/missing.txt", "resource depot:///dir/missing.txt not found", mcp.ErrInvalidParams},
				{"depot:///dir", "not found: /dir is a directory", mcp.ErrInvalidParams},
				{"depot:///dir/small.txt?x=1", "query or fragment", mcp.ErrInvalidParams},
				{"file:///etc/passwd", "resource file:///etc/passwd not found", mcp.ErrInvalidParams},
				{"depotfs://nothing", "resource depotfs://nothing not found", mcp.ErrInvalidParams},
				{"depot:///secret/key.txt", "depot:///secret/key.txt", mcp.ErrInvalidRequest},
				{"depot:///dir/big.txt", "over the 100-byte limit", mcp.ErrInternalError},
			} {
				req := mcp.ReadResourceRequest{}
				req.Params.URI = tc.uri
				res, err := h.client.ReadResource(context.Background(), req)
				if err == nil {
					t.Fatalf("%s: read succeeded: %+v", tc.uri, res)
				}
				if !errors.Is(err, tc.code) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: error %q, want %v mentioning %q", tc.uri, err, tc.code, tc.want)
				}
			}
			// The session is still usable, and the depot unchanged.
			req := mcp.ReadResourceRequest{}
			req.Params.URI = "depot:///dir/small.txt"
			if res, err := h.client.ReadResource(context.Background(), req); err != nil || len(res.Contents) != 1 {
				t.Fatalf("a read after the errors: %+v, %v", res, err)
			}
			if _, err := h.st.Stat(context.Background(), "/dir/missing.txt"); !errors.Is(err, store.ErrNotExist) {
				t.Errorf("/dir/missing.txt after the failed read: %v", err)
			}
		})
	}
}

// TestReadResourceAtRevision: resources/read takes ?revision=N and reads
// the file as it was then (a kept version); a revision not kept, and any
// other query, are refused.
func TestReadResourceAtRevision(t *testing.T) {
	t.Parallel()
	h := startHarness(t, harnessConfig{store: &bolt.Options{KeepVersions: 1}})
	var revs []uint64
	for _, s := range []string{"one", "two", "three"} {
		revs = append(revs, h.put("/v.txt", []byte(s)).Revision)
	}
	read := func(uri string) (string, error) {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		res, err := h.client.ReadResource(testerCtx, req)
		if err != nil {
			return "", err
		}
		return res.Contents[0].(mcp.TextResourceContents).Text, nil
	}
	base := mcpserver.ResourceURI("/v.txt")
	for _, tc := range []struct {
		query, want, wantErr string
	}{
		{"", "three", ""},
		{fmt.Sprintf("?revision=%d", revs[2]), "three", ""},
		{fmt.Sprintf("?revision=%d", revs[1]), "two", ""},
		{fmt.Sprintf("?revision=%d", revs[0]), "", "no file"},
		{"?revision=0", "", "revision=N"},
		{"?rev=2", "", "revision=N"},
		{fmt.Sprintf("?revision=%d#x", revs[1]), "", "revision=N"},
	} {
		got, err := read(base + tc.query)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.query, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %q, %v; want an error saying %q", tc.query, got, err, tc.wantErr)
		}
	}
}
