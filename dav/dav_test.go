package dav_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depotfs/depotfs/dav"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// tree is a dav.Tree over a real bolt store for a caller who may read
// below prefix only: directories leading to it are shown, nothing else.
// It records the outcome of each request.
type tree struct {
	st     *bolt.Store
	prefix string
	done   *[]error
}

func (t tree) visible(p string, dir bool) bool {
	return depotpath.Within(p, t.prefix) || dir && depotpath.Within(t.prefix, p)
}

func (t tree) deny(p string) error {
	return &policy.Denied{Tool: "webdav", Path: p, Access: grant.Read, Rule: "test: only " + t.prefix}
}

func (t tree) stat(p string, e store.Entry, err error) (store.Entry, error) {
	if !t.visible(p, true) || err == nil && !e.IsDir() && !t.visible(p, false) {
		return store.Entry{}, t.deny(p)
	}
	return e, err
}

func (t tree) shown(es []store.Entry, err error) ([]store.Entry, error) {
	return slices.DeleteFunc(es, func(e store.Entry) bool { return !t.visible(e.Path, e.IsDir()) }), err
}

func (t tree) Stat(ctx context.Context, p string) (store.Entry, error) {
	e, err := t.st.Stat(ctx, p)
	return t.stat(p, e, err)
}

func (t tree) StatAt(ctx context.Context, p string, rev uint64) (store.Entry, error) {
	e, err := t.st.StatAt(ctx, p, rev)
	return t.stat(p, e, err)
}

func (t tree) ReadDir(ctx context.Context, p string) ([]store.Entry, error) {
	if !t.visible(p, true) {
		return nil, t.deny(p)
	}
	return t.shown(t.st.ReadDir(ctx, p))
}

func (t tree) ReadDirAt(ctx context.Context, p string, rev uint64) ([]store.Entry, error) {
	if !t.visible(p, true) {
		return nil, t.deny(p)
	}
	return t.shown(t.st.ReadDirAt(ctx, p, rev))
}

func (t tree) Open(ctx context.Context, p string) (store.Content, error) {
	if !t.visible(p, false) {
		return nil, t.deny(p)
	}
	return t.st.Open(ctx, p)
}

func (t tree) OpenAt(ctx context.Context, p string, rev uint64) (store.Content, error) {
	if !t.visible(p, false) {
		return nil, t.deny(p)
	}
	return t.st.OpenAt(ctx, p, rev)
}

func (t tree) Snapshots(ctx context.Context) ([]store.Snapshot, error) {
	all, err := t.st.Snapshots(ctx)
	return slices.DeleteFunc(all, func(s store.Snapshot) bool { return !t.visible(s.Prefix, false) }), err
}

func (t tree) Finish(_ string, err error) error {
	*t.done = append(*t.done, err)
	return nil
}

// fixture is a handler over a store holding /a (the caller's) and /b
// (another tenant's), with a snapshot "s" of /a taken before /a/x.txt
// changed, and a clock the test sets.
type fixture struct {
	h    *dav.Handler
	done []error
	now  time.Time
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	for p, c := range map[string]string{"/a/x.txt": "old", "/a/d/y.txt": "why", "/a/sp ace&<.txt": "amp", "/b/secret.txt": "secret", "/b/deep/z": "z"} {
		if _, err := st.Put(ctx, store.PutRequest{Path: p, Data: []byte(c)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateSnapshot(ctx, store.SnapshotRequest{Name: "s", Prefix: "/a", Expires: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSnapshot(ctx, store.SnapshotRequest{Name: "bsnap", Prefix: "/b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, store.PutRequest{Path: "/a/x.txt", Data: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{now: time.Now()}
	f.h = dav.New(dav.Options{Now: func() time.Time { return f.now }, Begin: func(context.Context, string) dav.Request {
		return tree{st: st, prefix: "/a", done: &f.done}
	}})
	return f
}

// do sends one request and returns the recorded response.
func (f *fixture) do(method, target, depth, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "http://depot"+dav.Prefix, strings.NewReader(body))
	r.Method = method   // any method a client may send, valid token or not
	r.URL.Path = target // as the server decoded it
	if depth != "" {
		r.Header.Set("Depth", depth)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func TestRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct {
		name, method, path, depth, body string
		status                          int
		has, lacks                      []string
	}{
		{"root depth 1", "PROPFIND", "/dav/", "1", "", 207, []string{"<D:href>/dav/a/</D:href>"}, []string{"/dav/b"}},
		{"root without slash", "PROPFIND", "/dav", "0", "", 207, []string{"<D:href>/dav/</D:href>"}, nil},
		{"escaped names", "PROPFIND", "/dav/a/", "1", "", 207, []string{"/dav/a/sp%20ace&amp;%3C.txt", "<D:href>/dav/a/d/</D:href>", "<D:getcontentlength>3</D:getcontentlength>"}, nil},
		{"propname", "PROPFIND", "/dav/a/x.txt", "0", `<propfind xmlns="DAV:"><propname/></propfind>`, 207, []string{"<D:getetag/>", "<D:resourcetype/>"}, []string{"new"}},
		{"bad body", "PROPFIND", "/dav/a/", "1", `<propfind`, 400, nil, nil},
		{"infinity", "PROPFIND", "/dav/a/", "infinity", "", 403, []string{"propfind-finite-depth"}, nil},
		{"no depth", "PROPFIND", "/dav/a/", "", "", 403, []string{"propfind-finite-depth"}, nil},
		{"get", "GET", "/dav/a/x.txt", "", "", 200, []string{"new"}, nil},
		{"listing", "GET", "/dav/a/", "", "", 200, []string{`href="/dav/a/sp%20ace&amp;%3C.txt"`, "sp ace&amp;&lt;.txt"}, []string{"/dav/b"}},
		{"dir without slash", "GET", "/dav/a", "", "", 301, nil, nil},
		{"other tenant", "GET", "/dav/b/secret.txt", "", "", 404, []string{"not found"}, []string{"secret", "/dav/b"}},
		{"other tenant dir", "PROPFIND", "/dav/b/", "1", "", 404, nil, []string{"secret", "deep"}},
		{"missing", "GET", "/dav/a/nope", "", "", 404, []string{"not found"}, nil},
		{"dotdot", "GET", "/dav/a/../b/secret.txt", "", "", 400, nil, []string{"secret"}},
		{"nul", "GET", "/dav/a/x.txt\x00", "", "", 400, nil, nil},
		{"backslash", "GET", "/dav/a\\..\\b", "", "", 400, nil, nil},
		{"empty component", "GET", "/dav/a//x.txt", "", "", 400, nil, nil},
		{"overlong", "GET", "/dav/a/" + strings.Repeat("x", 5000), "", "", 400, nil, nil},
		{"outside prefix", "GET", "/davx", "", "", 400, nil, nil},
		{"snapshot file", "GET", "/dav/.snapshots/s/x.txt", "", "", 200, []string{"old"}, []string{"new"}},
		{"snapshots dir", "PROPFIND", "/dav/.snapshots/", "1", "", 207, []string{"<D:href>/dav/.snapshots/s/</D:href>"}, []string{"bsnap"}},
		{"snapshot tree", "PROPFIND", "/dav/.snapshots/s/", "1", "", 207, []string{"<D:href>/dav/.snapshots/s/d/</D:href>"}, nil},
		{"other's snapshot", "GET", "/dav/.snapshots/bsnap/secret.txt", "", "", 404, nil, []string{"secret"}},
		{"put", "PUT", "/dav/a/x.txt", "", "overwritten", 405, []string{"read-only"}, nil},
		{"delete", "DELETE", "/dav/a/x.txt", "", "", 405, []string{"read-only"}, nil},
		{"mkcol", "MKCOL", "/dav/a/new/", "", "", 405, []string{"read-only"}, nil},
		{"options", "OPTIONS", "/dav/", "", "", 200, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.do(tt.method, tt.path, tt.depth, tt.body)
			body := w.Body.String()
			if w.Code != tt.status {
				t.Fatalf("%s %q = %d, want %d: %s", tt.method, tt.path, w.Code, tt.status, body)
			}
			for _, s := range tt.has {
				if !strings.Contains(body, s) {
					t.Errorf("%s %q lacks %q:\n%s", tt.method, tt.path, s, body)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(body, s) {
					t.Errorf("%s %q shows %q:\n%s", tt.method, tt.path, s, body)
				}
			}
		})
	}
	// The writes changed nothing.
	if w := f.do("GET", "/dav/a/x.txt", "", ""); w.Body.String() != "new" {
		t.Errorf("/a/x.txt after the refused writes: %q", w.Body.String())
	}
	if w := f.do("PROPFIND", "/dav/a/new/", "0", ""); w.Code != 404 {
		t.Errorf("MKCOL made /a/new: %d", w.Code)
	}
	// Each request was recorded once; refusals with the reason.
	readOnly := 0
	for _, err := range f.done {
		if errors.Is(err, dav.ErrReadOnly) {
			readOnly++
		}
	}
	if readOnly != 3 {
		t.Errorf("%d requests recorded as read-only refusals, want 3", readOnly)
	}
}

func TestSnapshotExpires(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if w := f.do("GET", "/dav/.snapshots/s/x.txt", "", ""); w.Code != 200 {
		t.Fatalf("before expiry: %d", w.Code)
	}
	f.now = f.now.Add(2 * time.Hour)
	if w := f.do("GET", "/dav/.snapshots/s/x.txt", "", ""); w.Code != 404 {
		t.Errorf("after expiry: %d, want 404", w.Code)
	}
	if w := f.do("PROPFIND", "/dav/.snapshots/", "1", ""); strings.Contains(w.Body.String(), "/s/") {
		t.Errorf("an expired snapshot is listed:\n%s", w.Body.String())
	}
}

func TestRangeAndETag(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := f.do("GET", "/dav/a/d/y.txt", "", "")
	etag := w.Header().Get("ETag")
	if len(etag) != 66 || w.Header().Get("Accept-Ranges") != "bytes" {
		t.Fatalf("ETag %q, Accept-Ranges %q", etag, w.Header().Get("Accept-Ranges"))
	}
	r := httptest.NewRequest("GET", "http://depot/dav/a/d/y.txt", nil)
	r.Header.Set("Range", "bytes=1-1")
	rw := httptest.NewRecorder()
	f.h.ServeHTTP(rw, r)
	if rw.Code != 206 || rw.Body.String() != "h" {
		t.Errorf("range 1-1 = %d %q", rw.Code, rw.Body.String())
	}
	r = httptest.NewRequest("GET", "http://depot/dav/a/d/y.txt", nil)
	r.Header.Set("If-None-Match", etag)
	rw = httptest.NewRecorder()
	f.h.ServeHTTP(rw, r)
	if rw.Code != http.StatusNotModified {
		t.Errorf("If-None-Match with the ETag = %d", rw.Code)
	}
}

// FuzzRequests sends arbitrary methods, URL paths, depths and bodies: the
// handler never panics, never answers 5xx, and never names anything of /b.
func FuzzRequests(f *testing.F) {
	for _, s := range []string{"/dav/", "/dav/a/x.txt", "/dav/b/secret.txt", "/dav/a/../b", "/dav/.snapshots/bsnap/", "/dav/.snapshots/s/d"} {
		f.Add("PROPFIND", s, "1", "")
		f.Add("GET", s, "", "")
	}
	f.Add("PROPFIND", "/dav/a/", "0", `<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/><x:y xmlns:x="b"/></D:prop></D:propfind>`)
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, method, p, depth, body string) {
		if !strings.HasPrefix(p, "/") {
			return
		}
		w := fx.do(method, p, depth, body)
		if w.Code >= 500 {
			t.Fatalf("%s %q = %d: %s", method, p, w.Code, w.Body.String())
		}
		out := w.Body.String() + strings.Join(w.Header().Values("Location"), "")
		for _, name := range []string{"secret", "deep", "bsnap"} {
			if strings.Contains(out, name) && !strings.Contains(p, name) {
				t.Fatalf("%s %q shows %q: %s", method, p, name, out)
			}
		}
		if bytes.Contains(w.Body.Bytes(), []byte("secret")) {
			t.Fatalf("%s %q shows /b's content", method, p)
		}
	})
}

// BenchmarkPropfind lists a directory of 200 files at depth 1: the work
// the server does for each directory a client walks.
func BenchmarkPropfind(b *testing.B) {
	st, err := bolt.Open(filepath.Join(b.TempDir(), "depot.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	reqs := make([]store.PutRequest, 200)
	for i := range reqs {
		reqs[i] = store.PutRequest{Path: fmt.Sprintf("/a/d/f%06d.txt", i), Data: []byte(fmt.Sprint(i))}
	}
	if _, err := st.PutBatch(context.Background(), reqs); err != nil {
		b.Fatal(err)
	}
	var done []error
	h := dav.New(dav.Options{Begin: func(context.Context, string) dav.Request { return tree{st: st, prefix: "/a", done: &done} }})
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("PROPFIND", "http://depot/dav/a/d/", nil)
		r.Header.Set("Depth", "1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 207 {
			b.Fatal(w.Code)
		}
		done = done[:0]
	}
}

// wide is a Tree of 100,000 files in 1,000 directories below /w, made
// up as they are asked for, that counts the listings read.
type wide struct{ readDirs *atomic.Int64 }

func (w wide) Stat(_ context.Context, p string) (store.Entry, error) {
	if p == "/" || p == "/w" || strings.Count(p, "/") == 2 {
		return store.Entry{Path: p, Kind: store.KindDir}, nil
	}
	return store.Entry{Path: p, Kind: store.KindFile, Size: 1}, nil
}

func (w wide) ReadDir(_ context.Context, dir string) ([]store.Entry, error) {
	w.readDirs.Add(1)
	var es []store.Entry
	switch {
	case dir == "/":
		es = append(es, store.Entry{Path: "/w", Kind: store.KindDir})
	case dir == "/w":
		for i := range 1000 {
			es = append(es, store.Entry{Path: fmt.Sprintf("/w/d%03d", i), Kind: store.KindDir})
		}
	default:
		for i := range 100 {
			es = append(es, store.Entry{Path: fmt.Sprintf("%s/f%03d", dir, i), Kind: store.KindFile, Size: 1})
		}
	}
	return es, nil
}

func (w wide) Open(context.Context, string) (store.Content, error) { return nil, store.ErrNotExist }
func (w wide) StatAt(ctx context.Context, p string, _ uint64) (store.Entry, error) {
	return w.Stat(ctx, p)
}
func (w wide) ReadDirAt(ctx context.Context, p string, _ uint64) ([]store.Entry, error) {
	return w.ReadDir(ctx, p)
}
func (w wide) OpenAt(context.Context, string, uint64) (store.Content, error) {
	return nil, store.ErrNotExist
}
func (w wide) Snapshots(context.Context) ([]store.Snapshot, error) { return nil, nil }
func (w wide) Finish(string, error) error                          { return nil }

// TestPropfindInfinityOnWideTree asks for the whole of a 100,000-file
// tree at once, with Depth infinity and with no Depth (which means
// infinity): refused with 403 before any directory is read, in well
// under a second and a few KiB. Depth 1 of the same tree lists one
// directory.
func TestPropfindInfinityOnWideTree(t *testing.T) {
	t.Parallel()
	var reads atomic.Int64
	h := dav.New(dav.Options{Begin: func(context.Context, string) dav.Request { return wide{&reads} }})
	for _, depth := range []string{"infinity", "Infinity", "", "2", "1 ", "-1"} {
		for _, target := range []string{"/dav/", "/dav/w/"} {
			r := httptest.NewRequest("PROPFIND", "http://depot"+target, nil)
			if depth != "" {
				r.Header.Set("Depth", depth)
			}
			w := httptest.NewRecorder()
			start := time.Now()
			h.ServeHTTP(w, r)
			if took := time.Since(start); took > time.Second {
				t.Errorf("PROPFIND %s depth %q took %v", target, depth, took)
			}
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "propfind-finite-depth") || w.Body.Len() > 4096 {
				t.Errorf("PROPFIND %s depth %q = %d, %d bytes: %.200s", target, depth, w.Code, w.Body.Len(), w.Body.String())
			}
		}
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("refused PROPFINDs read %d directories", n)
	}
	r := httptest.NewRequest("PROPFIND", "http://depot/dav/w/", nil)
	r.Header.Set("Depth", "1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if got := strings.Count(w.Body.String(), "<D:response>"); w.Code != http.StatusMultiStatus || got != 1001 || reads.Load() != 1 {
		t.Errorf("PROPFIND /w/ depth 1 = %d with %d responses after %d listings; want 207, 1001 and 1", w.Code, got, reads.Load())
	}
}
