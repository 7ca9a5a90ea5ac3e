package mcpserver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/feed"
)

// TestGuideChanges: the long-poll door lists the changes below its prefix
// after the cursor, waits for the next, and refuses bad arguments naming
// the fix, changing nothing.
func TestGuideChanges(t *testing.T) {
	h := newHarness(t, nil)
	var first feed.Page
	h.ok("guide_changes", m{"prefix": "/src"}, &first)
	if len(first.Changes) != 0 || first.Cursor != h.revision() {
		t.Fatalf("without since: %+v; want no change and the cursor at the revision %d", first, h.revision())
	}
	h.put("/src/a.go", []byte("a"))
	h.put("/doc/x.md", []byte("x"))
	h.put("/src/a.go", []byte("a2"))
	var page feed.Page
	h.ok("guide_changes", m{"prefix": "/src/", "since": first.Cursor}, &page)
	if got := fmt.Sprint(page.Changes); len(page.Changes) != 3 || page.Changes[0].Path != "/src" || page.Changes[0].Type != "directory" ||
		page.Changes[0].Kind != feed.Created || page.Changes[1].Kind != feed.Created || page.Changes[2].Kind != feed.Updated || page.Changes[2].Path != "/src/a.go" {
		t.Fatalf("changes below /src: %s", got)
	}
	// The long poll returns on the next change below the prefix.
	done := make(chan feed.Page, 1)
	go func() {
		var p feed.Page
		h.ok("guide_changes", m{"prefix": "/src", "since": page.Cursor, "wait_ms": "20000"}, &p)
		done <- p
	}()
	h.put("/src/b.go", []byte("b"))
	select {
	case p := <-done:
		if len(p.Changes) != 1 || p.Changes[0].Path != "/src/b.go" || p.Cursor != h.revision() {
			t.Fatalf("long poll: %+v", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the long poll did not return on a change")
	}

	rev := h.revision()
	for _, tc := range []struct {
		args      m
		typ, want string
	}{
		{m{"since": rev + 1}, "validation", "beyond the depot's revision"},
		{m{"since": -1}, "validation", "since"},
		{m{"prefix": "/a/../../x"}, "security", "climbs above the root"},
		{m{"prefix": "a\x00b"}, "validation", "prefix"},
		{m{"max": 0}, "validation", "max"},
		{m{"wait_ms": 60001}, "validation", "wait_ms"},
		{m{"cursor": "1"}, "validation", "cursor"},
	} {
		env := h.fail("guide_changes", tc.args, tc.typ)
		if !strings.Contains(env.Error.Message, tc.want) {
			t.Errorf("%v: %s, want it to name %q", tc.args, env.Error.Message, tc.want)
		}
	}
	if h.revision() != rev {
		t.Errorf("refused calls moved the revision from %d to %d", rev, h.revision())
	}
}
