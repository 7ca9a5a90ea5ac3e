package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// snapshotReply mirrors guide_snapshot's data.
type snapshotReply struct {
	Snapshots []struct {
		Name     string `json:"name"`
		Path     string `json:"path"`
		Revision uint64 `json:"revision"`
		Yours    bool   `json:"yours"`
	} `json:"snapshots"`
}

func (r snapshotReply) names() []string {
	out := []string{}
	for _, s := range r.Snapshots {
		out = append(out, s.Name)
	}
	return out
}

// historyReply mirrors guide_file_history's data.
type historyReply struct {
	Versions []struct {
		Revision uint64 `json:"revision"`
		Live     bool   `json:"live"`
		SHA256   string `json:"sha256"`
	} `json:"versions"`
}

// newVersioned is a harness with an audit recorder, a store keeping keep
// versions per path, and at most maxSnaps snapshots per identity.
func newVersioned(t *testing.T, keep, maxSnaps int) *enforced {
	t.Helper()
	host, err := policy.NewHost(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	o := &mcpserver.Options{Policy: host, Audit: rec, Tools: mcpserver.Profiles(), Settings: mcpserver.Settings{MountPoint: testMount,
		KeepVersions: keep, MaxSnapshotsPerIdentity: maxSnaps}}
	return &enforced{harness: startHarness(t, harnessConfig{opts: o, store: &bolt.Options{KeepVersions: keep}}), rec: rec}
}

// depotState is what a refused call must leave as it was: the revision and
// the snapshots.
func depotState(t *testing.T, h *enforced) (uint64, []store.Snapshot) {
	t.Helper()
	snaps, err := h.st.Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h.revision(), snaps
}

// TestSnapshotTenants: a second identity with fewer grants cannot list,
// restore from or delete another's snapshot, nor learn its name except by
// trying to take it; creating one needs write access to its path; each
// identity holds at most its cap, and refusals change nothing.
func TestSnapshotTenants(t *testing.T) {
	t.Parallel()
	h := newVersioned(t, 1, 2)
	a := agent(t, "a", "guide:/a:rw")
	b := agent(t, "b", "guide:/b:rw")
	h.as(a).ok("guide_cache_file", m{"path": "/a/x.txt", "content": "a's"}, nil)
	h.as(b).ok("guide_cache_file", m{"path": "/b/y.txt", "content": "b's"}, nil)
	var created snapshotReply
	h.as(a).ok("guide_snapshot", m{"action": "create", "name": "sa", "path": "/a"}, &created)
	if len(created.Snapshots) != 1 || created.Snapshots[0].Path != "/a" || !created.Snapshots[0].Yours {
		t.Fatalf("created %+v", created)
	}

	rev, snaps := depotState(t, h)
	for _, c := range []struct {
		name string
		args m
		want string
	}{
		{"delete another's", m{"action": "delete", "name": "sa"}, "not_found"},
		{"create over another's prefix", m{"action": "create", "name": "sb", "path": "/a"}, "security"},
		{"create the whole depot", m{"action": "create", "name": "sb"}, "security"},
		{"bad name", m{"action": "create", "name": "../x", "path": "/b"}, "validation"},
		{"dot name", m{"action": "create", "name": "..", "path": "/b"}, "validation"},
		{"long name", m{"action": "create", "name": string(bytes.Repeat([]byte("n"), 65)), "path": "/b"}, "validation"},
		{"no name", m{"action": "create", "path": "/b"}, "validation"},
		{"no action", m{"name": "sb"}, "validation"},
		{"unknown action", m{"action": "rename", "name": "sb"}, "validation"},
		{"ttl on delete", m{"action": "delete", "name": "sb", "ttl_seconds": 5}, "validation"},
		{"reserved path", m{"action": "create", "name": "sb", "path": "/.snapshots/sa"}, "security"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h.as(b).fail("guide_snapshot", c.args, c.want)
		})
	}
	h.as(b).fail("guide_restore", m{"path": "/b/y.txt", "snapshot": "sa"}, "not_found")
	h.as(b).fail("guide_restore", m{"path": "/a/x.txt", "snapshot": "sa"}, "security")
	var listed snapshotReply
	h.as(b).ok("guide_snapshot", m{"action": "list"}, &listed)
	if len(listed.Snapshots) != 0 {
		t.Errorf("b lists %v", listed.names())
	}
	if r2, s2 := depotState(t, h); r2 != rev || !slices.Equal(s2, snaps) {
		t.Errorf("refused calls changed the depot: revision %d → %d, snapshots %v → %v", rev, r2, snaps, s2)
	}
	audited := 0
	for _, r := range h.rec.records() {
		if r.Tool == "guide_snapshot" && r.Identity == b.String() {
			audited++
		}
	}
	if audited != 12 {
		t.Errorf("%d audit records of b's 12 guide_snapshot calls", audited)
	}

	// The cap is per tenant: a holds 2 at most, b still creates, under
	// a's name too (names are per tenant), and then holds its own name.
	h.as(a).ok("guide_snapshot", m{"action": "create", "name": "sa2", "path": "/a"}, nil)
	h.as(a).fail("guide_snapshot", m{"action": "create", "name": "sa3", "path": "/a"}, "limit")
	h.as(b).ok("guide_snapshot", m{"action": "create", "name": "sa", "path": "/b"}, nil)
	h.as(b).fail("guide_snapshot", m{"action": "create", "name": "sa", "path": "/b"}, "conflict")
	h.as(b).ok("guide_snapshot", m{"action": "delete", "name": "sa"}, nil)
	h.as(b).ok("guide_snapshot", m{"action": "create", "name": "sb", "path": "/b"}, nil)
	h.as(a).ok("guide_snapshot", m{"action": "list"}, &listed)
	if got := listed.names(); !slices.Equal(got, []string{"sa", "sa2"}) {
		t.Errorf("a lists %v", got)
	}
	h.as(a).ok("guide_snapshot", m{"action": "delete", "name": "sa"}, nil)
	h.as(a).ok("guide_snapshot", m{"action": "create", "name": "sa3", "path": "/a"}, nil)

	// A reader of /a lists a's snapshots but neither creates nor deletes.
	r := agent(t, "r", "guide:/a:r")
	h.as(r).ok("guide_snapshot", m{"action": "list"}, &listed)
	if got := listed.names(); !slices.Equal(got, []string{"sa2", "sa3"}) {
		t.Errorf("a reader of /a lists %v", got)
	}
	rev, snaps = depotState(t, h)
	h.as(r).fail("guide_snapshot", m{"action": "create", "name": "sr", "path": "/a"}, "security")
	h.as(r).fail("guide_snapshot", m{"action": "delete", "name": "sa2"}, "security")
	if r2, s2 := depotState(t, h); r2 != rev || !slices.Equal(s2, snaps) {
		t.Errorf("a reader's refused calls changed the depot")
	}
}

// TestHistoryRestore: a file's kept versions are listed newest first,
// restore brings back a kept one's bytes as a new revision, and a version
// not kept is refused with the kept ones named, changing nothing.
func TestHistoryRestore(t *testing.T) {
	t.Parallel()
	h := newVersioned(t, 2, 4)
	id := identity.Identity{Transport: "test", Subject: "tester", Full: true}
	h.as(id)
	var revs []uint64
	for _, s := range []string{"one", "two", "three", "four"} {
		var f fileReply
		h.ok("guide_cache_file", m{"path": "/f.txt", "content": s}, &f)
		revs = append(revs, f.Revision)
	}
	var hist historyReply
	h.ok("guide_file_history", m{"path": "/f.txt"}, &hist)
	var got []uint64
	for _, v := range hist.Versions {
		got = append(got, v.Revision)
	}
	if want := []uint64{revs[3], revs[2], revs[1]}; !slices.Equal(got, want) || !hist.Versions[0].Live || hist.Versions[1].Live {
		t.Fatalf("history %+v, want revisions %v, the first live", hist, want)
	}

	// fs read takes a kept revision; one not kept is not_found.
	r := h.callRaw("read", m{"path": "/f.txt", "revision": revs[1]})
	var read struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal([]byte(r.text), &read); r.isError || err != nil || read.Content != "two" {
		t.Errorf("read at revision %d: %s", revs[1], r.text)
	}
	if r := h.callRaw("read", m{"path": "/f.txt", "revision": revs[0]}); !r.isError || !bytes.Contains([]byte(r.text), []byte("not_found")) {
		t.Errorf("read at a revision not kept: %s", r.text)
	}

	rev := h.revision()
	env := h.fail("guide_restore", m{"path": "/f.txt", "revision": revs[0]}, "not_found")
	if !bytes.Contains([]byte(env.Error.Message), []byte("kept")) {
		t.Errorf("message %q does not name the kept revisions", env.Error.Message)
	}
	h.fail("guide_restore", m{"path": "/f.txt"}, "validation")
	h.fail("guide_restore", m{"path": "/f.txt", "revision": revs[1], "snapshot": "s"}, "validation")
	h.fail("guide_restore", m{"path": "/f.txt", "snapshot": "none"}, "not_found")
	h.fail("guide_file_history", m{"path": "/nothing"}, "not_found")
	if h.revision() != rev || string(h.read("/f.txt")) != "four" {
		t.Fatalf("refused restores changed the depot")
	}

	var f fileReply
	h.ok("guide_restore", m{"path": "/f.txt", "revision": revs[1]}, &f)
	if string(h.read("/f.txt")) != "two" || f.Revision <= rev || f.SHA256 != sum([]byte("two")) {
		t.Errorf("restored %q, reply %+v", h.read("/f.txt"), f)
	}

	// From a snapshot, after the file was removed.
	h.ok("guide_snapshot", m{"action": "create", "name": "s"}, nil)
	if err := h.st.Remove(context.Background(), store.RemoveRequest{Path: "/f.txt"}); err != nil {
		t.Fatal(err)
	}
	h.ok("guide_restore", m{"path": "/f.txt", "snapshot": "s"}, nil)
	if string(h.read("/f.txt")) != "two" {
		t.Errorf("restored from the snapshot: %q", h.read("/f.txt"))
	}
	h.fail("guide_restore", m{"path": "/g.txt", "snapshot": "s"}, "not_found")
}

// TestSnapshotStats: guide_cache_stats shows what kept versions hold, and
// the caller's snapshots against its cap.
func TestSnapshotStats(t *testing.T) {
	t.Parallel()
	h := newVersioned(t, 0, 3)
	h.as(identity.Identity{Transport: "test", Subject: "tester", Full: true})
	h.ok("guide_cache_file", m{"path": "/f.txt", "content": "first"}, nil)
	h.ok("guide_snapshot", m{"action": "create", "name": "s"}, nil)
	h.ok("guide_cache_file", m{"path": "/f.txt", "content": "second"}, nil)
	var stats struct {
		Store struct {
			Versions  int64 `json:"versions"`
			HeldBytes int64 `json:"held_bytes"`
			Snapshots int64 `json:"snapshots"`
		} `json:"store"`
		Limits struct {
			KeepVersions int `json:"keep_versions"`
		} `json:"limits"`
		Caller struct {
			Limits []struct {
				Name  string `json:"name"`
				Held  int64  `json:"held"`
				Limit int64  `json:"limit"`
			} `json:"limits"`
		} `json:"caller"`
	}
	h.ok("guide_cache_stats", m{}, &stats)
	if stats.Store.Versions != 1 || stats.Store.HeldBytes != int64(len("first")) || stats.Store.Snapshots != 1 {
		t.Errorf("store %+v", stats.Store)
	}
	i := slices.IndexFunc(stats.Caller.Limits, func(l struct {
		Name  string `json:"name"`
		Held  int64  `json:"held"`
		Limit int64  `json:"limit"`
	}) bool {
		return l.Name == "snapshots"
	})
	if i < 0 || stats.Caller.Limits[i].Held != 1 || stats.Caller.Limits[i].Limit != 3 {
		raw, _ := json.Marshal(stats.Caller)
		t.Errorf("caller %s", raw)
	}
	h.ok("guide_snapshot", m{"action": "delete", "name": "s"}, nil)
	h.ok("guide_cache_stats", m{}, &stats)
	if stats.Store.Versions != 0 || stats.Store.HeldBytes != 0 {
		t.Errorf("after delete: store %+v", stats.Store)
	}
}
