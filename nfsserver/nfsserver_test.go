package nfsserver_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/willscott/go-nfs-client/nfs/rpc"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/nfsserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/fetch"
	"github.com/depotfs/depotfs/vfs"
)

// manyFiles is the size of the directory that READDIRPLUS must page
// through: more than one reply holds.
const manyFiles = 1500

// pushTree stores a tree under /proj (small files, a 3 MiB file, a large
// directory) and a file outside it, and returns the files by path.
func pushTree(tb testing.TB, st store.Store) map[string][]byte {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	files := map[string][]byte{
		"/proj/readme.txt":      []byte("read me\n"),
		"/proj/src/main.go":     []byte("package main\n\nfunc main() {}\n"),
		"/proj/src/lib/util.go": []byte("package lib\n"),
		"/proj/empty":           {},
		"/secret/key.txt":       []byte("not for NFS clients\n"),
	}
	big := make([]byte, 3<<20+17)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	files["/proj/big.bin"] = big
	for i := range manyFiles {
		files[fmt.Sprintf("/proj/many/f%05d.txt", i)] = fmt.Appendf(nil, "file %d\n", i)
	}
	var reqs []store.PutRequest
	for p, data := range files {
		reqs = append(reqs, store.PutRequest{Path: p, Data: data})
	}
	if _, err := st.PutBatch(context.Background(), reqs); err != nil {
		tb.Fatalf("push tree: %v", err)
	}
	return files
}

// within returns the files of tree below prefix.
func within(tree map[string][]byte, prefix string) map[string][]byte {
	out := map[string][]byte{}
	for p, b := range tree {
		if depotpath.Within(p, prefix) {
			out[p] = b
		}
	}
	return out
}

// TestLibnfsWalkAndRead walks the export with libnfs's nfs-ls and reads
// every file with nfs-cat: names, sizes and modes as the store has them,
// content byte for byte, and nothing outside the export.
func TestLibnfsWalkAndRead(t *testing.T) {
	nfsLs, nfsCat := need(t, "nfs-ls"), need(t, "nfs-cat")
	st, dir := newStore(t)
	tree := pushTree(t, st)
	s := serve(t, st, dir, nfsserver.Options{Prefix: "/proj"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	out, err := exec.CommandContext(ctx, nfsLs, "-R", s.url("/proj")).CombinedOutput()
	if err != nil {
		t.Fatalf("nfs-ls -R: %v\n%s", err, out)
	}
	// Each line: mode, links, uid, gid, size, path.
	got := map[string]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) != 6 {
			t.Fatalf("nfs-ls line %q", line)
		}
		got["/proj/"+f[5]] = f[0] + " " + f[1] + " " + f[4]
	}
	want := map[string]string{}
	for p, data := range within(tree, "/proj") {
		want[p] = "-r--r--r-- 1 " + strconv.Itoa(len(data))
		for _, d := range depotpath.Parents(p) {
			if depotpath.Within(d, "/proj") && d != "/proj" {
				want[d] = "dr-xr-xr-x 1 4096"
			}
		}
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("nfs-ls shows %s as %q, want %q", p, got[p], w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("nfs-ls shows %s, which is not in the export", p)
		}
	}

	// Every file but most of the large directory (one process each):
	// all the others, and every 100th of it.
	for p, data := range within(tree, "/proj") {
		if strings.HasPrefix(p, "/proj/many/") && !strings.HasSuffix(p, "00.txt") {
			continue
		}
		if len(data) == 0 {
			continue // nfs-cat reads nothing and says nothing either way
		}
		got, err := exec.CommandContext(ctx, nfsCat, s.url(p)).Output()
		if err != nil {
			t.Fatalf("nfs-cat %s: %v", p, err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("nfs-cat %s: %d bytes differ from the %d stored", p, len(got), len(data))
		}
	}
}

// TestAttributesMatchMount reads attributes with READDIRPLUS and GETATTR
// through go-nfs-client: the inode number, size, mode, mtime and link
// count the FUSE mount shows for the same entry, and every entry of a
// directory larger than one reply.
func TestAttributesMatchMount(t *testing.T) {
	st, dir := newStore(t)
	tree := pushTree(t, st)
	s := serve(t, st, dir, nfsserver.Options{Umask: 0o027, UID: 1234, GID: 5678})
	c := dial(t, s, "/")

	for _, d := range []string{"/proj", "/proj/many"} {
		entries, err := c.ReadDirPlus(d)
		if err != nil {
			t.Fatalf("readdirplus %s: %v", d, err)
		}
		stored, err := st.ReadDir(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			if e.FileName != "." && e.FileName != ".." {
				names = append(names, e.FileName)
			}
		}
		if len(names) != len(stored) {
			t.Fatalf("readdirplus %s: %d entries, the store has %d", d, len(names), len(stored))
		}
		byName := map[string]store.Entry{}
		for _, e := range stored {
			byName[depotpath.Base(e.Path)] = e
		}
		for _, ent := range entries {
			e, ok := byName[ent.FileName]
			if !ok {
				continue
			}
			a := ent.Attr.Attr
			wantMode := uint32(0o440)
			wantSize := uint64(e.Size)
			if e.IsDir() {
				wantMode, wantSize = 0o550, 4096
			}
			if ent.FileId != vfs.Ino(e) || a.Fileid != vfs.Ino(e) {
				t.Errorf("%s: file id %d (attr %d), the mount shows inode %d", e.Path, ent.FileId, a.Fileid, vfs.Ino(e))
			}
			if a.FileMode&0o7777 != wantMode || a.Filesize != wantSize || a.Nlink != 1 || a.UID != 1234 || a.GID != 5678 {
				t.Errorf("%s: mode %o size %d nlink %d owner %d:%d, want %o %d 1 1234:5678", e.Path, a.FileMode&0o7777, a.Filesize, a.Nlink, a.UID, a.GID, wantMode, wantSize)
			}
			if int64(a.Mtime.Seconds) != e.MTime.Unix() {
				t.Errorf("%s: mtime %d, stored %d", e.Path, a.Mtime.Seconds, e.MTime.Unix())
			}
		}
	}
	// Byte for byte through the same client.
	f, err := c.Open("/proj/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		t.Fatalf("read big.bin: %v", err)
	}
	if !bytes.Equal(buf.Bytes(), tree["/proj/big.bin"]) {
		t.Errorf("big.bin: %d bytes read differ from the %d stored", buf.Len(), len(tree["/proj/big.bin"]))
	}
}

// TestHandlesSurviveRestart keeps handles across a restart of the server
// (a new process would open the same handle table): they still read. A
// handle of a replaced file reads that version while the store keeps it,
// then answers NFS3ERR_STALE; so does the handle of a removed directory.
func TestHandlesSurviveRestart(t *testing.T) {
	ctx := context.Background()
	st, dir := newStore(t)
	tree := pushTree(t, st)
	s := serve(t, st, dir, nfsserver.Options{})
	c := dial(t, s, "/")
	_, fileFh := c.walkPath(t, "proj", "src", "main.go")
	_, dirFh := c.walkPath(t, "proj", "src", "lib")
	_, bigFh := c.walkPath(t, "proj", "big.bin")
	if fileFh == nil || dirFh == nil || bigFh == nil {
		t.Fatal("lookups failed")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	s2 := serve(t, st, dir, nfsserver.Options{})
	c2 := dial(t, s2, "/")
	if status, data := c2.readAll(t, fileFh); status != nfsOK || !bytes.Equal(data, tree["/proj/src/main.go"]) {
		t.Fatalf("after a restart, main.go's old handle reads status %d, %q", status, data)
	}
	if status, data := c2.readAll(t, bigFh); status != nfsOK || !bytes.Equal(data, tree["/proj/big.bin"]) {
		t.Fatalf("after a restart, big.bin's old handle reads status %d, %d bytes", status, len(data))
	}
	if status, fh := c2.lookup(t, dirFh, "util.go"); status != nfsOK || fh == nil {
		t.Fatalf("after a restart, a lookup in lib's old handle: status %d", status)
	}

	// Replace main.go: the old handle reads the old version, a new lookup
	// the new one.
	if _, err := st.Put(ctx, store.PutRequest{Path: "/proj/src/main.go", Data: []byte("version 2\n")}); err != nil {
		t.Fatal(err)
	}
	if status, data := c2.readAll(t, fileFh); status != nfsOK || !bytes.Equal(data, tree["/proj/src/main.go"]) {
		t.Errorf("the replaced file's handle reads status %d, %q; want the first version", status, data)
	}
	_, newFh := c2.walkPath(t, "proj", "src", "main.go")
	if status, data := c2.readAll(t, newFh); status != nfsOK || string(data) != "version 2\n" {
		t.Errorf("a new lookup reads status %d, %q; want version 2", status, data)
	}
	// Three more versions: the store keeps three, so the first is gone.
	for i := 3; i <= 5; i++ {
		if _, err := st.Put(ctx, store.PutRequest{Path: "/proj/src/main.go", Data: fmt.Appendf(nil, "version %d\n", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if status, _ := c2.readAll(t, fileFh); status != nfsStale {
		t.Errorf("the handle of a version no longer kept: status %d, want NFS3ERR_STALE (%d)", status, nfsStale)
	}
	if status, _ := c2.getattr(t, fileFh); status != nfsStale {
		t.Errorf("getattr of a version no longer kept: status %d, want NFS3ERR_STALE", status)
	}
	if err := st.Remove(ctx, store.RemoveRequest{Path: "/proj/src/lib", Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if status, _ := c2.lookup(t, dirFh, "util.go"); status != nfsStale {
		t.Errorf("lookup in a removed directory's handle: status %d, want NFS3ERR_STALE", status)
	}
}

// TestWritesAreRefused sends every NFSv3 procedure that writes: each
// answers NFS3ERR_ROFS and the depot does not change.
func TestWritesAreRefused(t *testing.T) {
	ctx := context.Background()
	st, dir := newStore(t)
	pushTree(t, st)
	s := serve(t, st, dir, nfsserver.Options{})
	c := dial(t, s, "/")
	_, projFh := c.walkPath(t, "proj")
	_, fileFh := c.walkPath(t, "proj", "readme.txt")
	rev, _ := st.Revision(ctx)
	sattr := []uint32{0, 0, 0, 0, 0, 0} // set nothing
	for _, tc := range []struct {
		name string
		proc uint32
		args []any
	}{
		{"SETATTR", procSetattr, []any{fileFh, sattr, uint32(0)}},
		{"WRITE", procWrite, []any{fileFh, uint64(0), uint32(4), uint32(2), []byte("evil")}},
		{"CREATE", procCreate, []any{projFh, "new.txt", uint32(0), sattr}},
		{"MKDIR", procMkdir, []any{projFh, "newdir", sattr}},
		{"SYMLINK", procSymlink, []any{projFh, "link", sattr, "/etc/passwd"}},
		{"MKNOD", procMknod, []any{projFh, "fifo", uint32(7), sattr}},
		{"REMOVE", procRemove, []any{projFh, "readme.txt"}},
		{"RMDIR", procRmdir, []any{projFh, "src"}},
		{"RENAME", procRename, []any{projFh, "readme.txt", projFh, "moved.txt"}},
		{"LINK", procLink, []any{fileFh, projFh, "hard"}},
		{"COMMIT", procCommit, []any{fileFh, uint64(0), uint32(0)}},
	} {
		if status, _ := c.call(t, tc.proc, tc.args...); status != nfsROFS {
			t.Errorf("%s: status %d, want NFS3ERR_ROFS (%d)", tc.name, status, nfsROFS)
		}
	}
	if now, _ := st.Revision(ctx); now != rev {
		t.Errorf("the depot moved from revision %d to %d", rev, now)
	}
	if e, err := st.Stat(ctx, "/proj/readme.txt"); err != nil || e.Size != int64(len("read me\n")) {
		t.Errorf("readme.txt after the writes: %+v, %v", e, err)
	}
}

// TestHostileRequests: names that climb, hide a slash or NUL, or are too
// long; forged handles and handles of another export; paths outside the
// prefix and outside the grants. None reaches a file it should not, none
// crashes the server, and the depot does not change.
func TestHostileRequests(t *testing.T) {
	ctx := context.Background()
	st, dir := newStore(t)
	tree := pushTree(t, st)
	s := serve(t, st, dir, nfsserver.Options{Prefix: "/proj"})
	c := dial(t, s, "/proj")
	rev, _ := st.Revision(ctx)

	_, srcFh := c.walkPath(t, "src")
	for _, name := range []string{"..", "../secret", "../../secret/key.txt", "src/main.go", "lib/../../readme.txt",
		"main.go\x00", "\x00", "", ".", "ma\u200bin.go", strings.Repeat("a", 256), strings.Repeat("a", 5000), "main.go/",
		// Escapes mean nothing to NFS: each is a name of its own, not found.
		"%2e%2e", "%2E%2E", "..%2fsecret", "%2e%2e%2f%2e%2e%2fsecret", "..\\secret", "..\x00", ".\x00.", "...", " .."} {
		status, fh := c.lookup(t, srcFh, name)
		if name == ".." || name == "." {
			// go-nfs answers these itself: the parent and the directory,
			// both within the export.
			if status != nfsOK {
				t.Errorf("lookup %q: status %d", name, status)
			}
			continue
		}
		if status == nfsOK {
			_, a := c.getattr(t, fh)
			t.Errorf("lookup %q in src succeeded (file id %d)", name, a.Fileid)
		}
	}
	// ".." at the export's root does not leave it.
	if status, _ := c.lookup(t, c.root, ".."); status != nfsAcces {
		t.Errorf("lookup .. at the export's root: status %d, want NFS3ERR_ACCES", status)
	}
	// A MOUNT outside the prefix is refused.
	port, _ := strconv.Atoi(s.port)
	if mc, err := dialMount(port); err != nil {
		t.Fatal(err)
	} else if _, err := mc.Mount("/secret", rpc.AuthNull); err == nil || !strings.Contains(err.Error(), "ACCES") {
		t.Errorf("mount of /secret: %v, want MNT3ERR_ACCES", err)
	}

	// Forged handles.
	_, good := c.walkPath(t, "readme.txt")
	rng := rand.New(rand.NewPCG(3, 4))
	forged := [][]byte{nil, {0}, good[:20], append(slices.Clone(good), 0, 0, 0, 0), make([]byte, 64)}
	for range 200 {
		b := slices.Clone(good)
		b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		forged = append(forged, b)
		r := make([]byte, len(good))
		for i := range r {
			r[i] = byte(rng.Uint32())
		}
		forged = append(forged, r)
	}
	for _, fh := range forged {
		status, data := c.readAll(t, fh)
		if status == nfsOK && !bytes.Equal(data, tree["/proj/readme.txt"]) {
			t.Fatalf("forged handle %x read %q", fh, data)
		}
		if status == nfsOK && !bytes.Equal(fh, good) {
			// A changed inode number or generation must not pass.
			t.Errorf("forged handle %x was accepted", fh)
		}
	}

	// A handle of another export (prefix /secret) on this one.
	other := serve(t, st, t.TempDir(), nfsserver.Options{Prefix: "/secret"})
	oc := dial(t, other, "/secret")
	_, keyFh := oc.walkPath(t, "key.txt")
	if status, _ := c.readAll(t, keyFh); status != nfsStale && status != nfsBadHdl {
		t.Errorf("another export's handle: status %d, want NFS3ERR_STALE or BADHANDLE", status)
	}

	// Narrower grants: only /proj/src shows; the rest answers as missing
	// and is not listed.
	narrow := serve(t, st, t.TempDir(), nfsserver.Options{Prefix: "/proj",
		Grants: []grant.Grant{{Tool: "nfs", Prefix: "/proj/src", Access: grant.Read}}})
	nc := dial(t, narrow, "/proj")
	entries, err := nc.ReadDirPlus("/")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.FileName)
	}
	sort.Strings(names)
	if !slices.Equal(names, []string{"src"}) {
		t.Errorf("the root's listing under a grant of /proj/src: %q", names)
	}
	if status, _ := nc.lookup(t, nc.root, "readme.txt"); status != nfsNoEnt {
		t.Errorf("lookup of readme.txt outside the grant: status %d, want NFS3ERR_NOENT", status)
	}
	if status, data := nc.readAll(t, good); status == nfsOK {
		t.Errorf("readme.txt's handle from the wider export read %q under the narrower grant", data)
	}

	if now, _ := st.Revision(ctx); now != rev {
		t.Errorf("the depot moved from revision %d to %d", rev, now)
	}
}

// TestSnapshotsReachable reads a file through /.snapshots/NAME after the
// live file changed: the snapshot's bytes.
func TestSnapshotsReachable(t *testing.T) {
	ctx := context.Background()
	st, dir := newStore(t)
	tree := pushTree(t, st)
	if _, err := st.CreateSnapshot(ctx, store.SnapshotRequest{Name: "before"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, store.PutRequest{Path: "/proj/readme.txt", Data: []byte("changed\n")}); err != nil {
		t.Fatal(err)
	}
	s := serve(t, st, dir, nfsserver.Options{})
	c := dial(t, s, "/")
	status, fh := c.walkPath(t, ".snapshots", "before", "proj", "readme.txt")
	if status != nfsOK {
		t.Fatalf("lookup .snapshots/before/proj/readme.txt: status %d", status)
	}
	if status, data := c.readAll(t, fh); status != nfsOK || !bytes.Equal(data, tree["/proj/readme.txt"]) {
		t.Errorf("the snapshot's readme.txt reads status %d, %q", status, data)
	}
	_, live := c.walkPath(t, "proj", "readme.txt")
	if _, data := c.readAll(t, live); string(data) != "changed\n" {
		t.Errorf("the live readme.txt reads %q", data)
	}
	_, sa := c.getattr(t, fh)
	_, la := c.getattr(t, live)
	if sa.Fileid == la.Fileid {
		t.Errorf("the snapshot's file and the live file share file id %d", sa.Fileid)
	}
	// The root's listing does not show .snapshots (a walk would walk
	// every snapshot).
	entries, err := c.ReadDirPlus("/")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.FileName == ".snapshots" {
			t.Error("the root lists .snapshots")
		}
	}
	if err := st.DeleteSnapshot(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	if status, _ := c.readAll(t, fh); status != nfsStale {
		t.Errorf("a deleted snapshot's file: status %d, want NFS3ERR_STALE", status)
	}
}

// TestPlaceholderRead reads a file the store holds only as a placeholder:
// the read asks for the content through the fetch broker and waits for
// it; one whose content never comes fails with NFS3ERR_IO after the
// broker's timeout.
func TestPlaceholderRead(t *testing.T) {
	ctx := context.Background()
	st, dir := newStore(t)
	broker := fetch.New(st, &fetch.Options{Timeout: 2 * time.Second})
	t.Cleanup(func() { broker.Close() })
	if _, err := st.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{
		{Path: "/ph/comes.txt", Kind: store.KindFile, Size: 6},
		{Path: "/ph/never.txt", Kind: store.KindFile, Size: 6},
	}}); err != nil {
		t.Fatal(err)
	}
	s := serve(t, st, dir, nfsserver.Options{Fetcher: broker})
	c := dial(t, s, "/")
	_, comes := c.walkPath(t, "ph", "comes.txt")
	_, never := c.walkPath(t, "ph", "never.txt")

	type result struct {
		status uint32
		data   []byte
	}
	done := make(chan result, 1)
	go func() {
		status, data := c.readAll(t, comes)
		done <- result{status, data}
	}()
	// An agent sees the request and sends the content.
	deadline := time.After(10 * time.Second)
	for {
		p := broker.Pending()
		if slices.ContainsFunc(p.Requests, func(r fetch.Request) bool { return r.Path == "/ph/comes.txt" }) {
			break
		}
		select {
		case <-p.Changed:
		case <-deadline:
			t.Fatal("no fetch request for /ph/comes.txt")
		}
	}
	if _, err := st.Put(ctx, store.PutRequest{Path: "/ph/comes.txt", Data: []byte("fetch!")}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.status != nfsOK || string(r.data) != "fetch!" {
		t.Errorf("the placeholder's read: status %d, %q", r.status, r.data)
	}
	start := time.Now()
	if status, _ := c.readAll(t, never); status != nfsIO {
		t.Errorf("a placeholder whose content never comes: status %d, want NFS3ERR_IO", status)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("the read failed after %v, before the broker's timeout", d)
	}
}
