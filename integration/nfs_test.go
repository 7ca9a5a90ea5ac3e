package integration_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"github.com/willscott/go-nfs-client/nfs/xdr"
)

var nfsAddrRE = regexp.MustCompile(`serving NFSv3 read-only" address=127\.0\.0\.1:(\d+)`)

// nfsURL is a libnfs URL of depot path p on the NFS port of the daemon's log.
func nfsURL(d *daemon, p string) string {
	m := nfsAddrRE.FindStringSubmatch(d.waitLogLine("the NFS server to start", "serving NFSv3 read-only"))
	if m == nil {
		d.t.Fatalf("no NFS address in the log")
	}
	return "nfs://127.0.0.1" + p + "?version=3&nfsport=" + m[1] + "&mountport=" + m[1]
}

// TestServeNFS runs depotfs serve --nfs with an export prefix and reads
// what agents pushed with libnfs's nfs-ls and nfs-cat, after a restart
// too: the prefix's files byte for byte, nothing outside it, every mount
// of the export audited.
func TestServeNFS(t *testing.T) {
	nfsLs, nfsCat := needProgram(t, "nfs-ls"), needProgram(t, "nfs-cat") // Debian: libnfs-utils
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--nfs", "127.0.0.1:0", "--nfs-prefix", "/proj"}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/proj/src/a.txt", "content": "alpha\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/secret/s.txt", "content": "no\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for range 2 {
		out, err := exec.CommandContext(ctx, nfsCat, nfsURL(d, "/proj/src/a.txt")).Output()
		if err != nil || string(out) != "alpha\n" {
			t.Fatalf("nfs-cat /proj/src/a.txt: %q, %v", out, err)
		}
		out, err = exec.CommandContext(ctx, nfsLs, "-R", nfsURL(d, "/proj")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "src/a.txt") || strings.Contains(string(out), "secret") {
			t.Fatalf("nfs-ls -R /proj: %v\n%s", err, out)
		}
		out, err = exec.CommandContext(ctx, nfsCat, nfsURL(d, "/secret/s.txt")).CombinedOutput()
		if err == nil || strings.Contains(string(out), "no\n") {
			t.Fatalf("nfs-cat /secret/s.txt outside the prefix: %q, %v", out, err)
		}
		d = d.restart()
	}
	log, err := os.ReadFile(d.auditLog())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), `"tool":"nfs/mount","paths":["/proj"]`) || !strings.Contains(string(log), `"tool":"nfs/mount","decision":"deny"`) {
		t.Errorf("the audit log has no allowed and refused NFS mounts:\n%s", log)
	}
}

// TestServeNFSGrants serves the whole depot with --nfs-grants naming /a
// only: libnfs's client lists and reads /a, and no name of /b shows by
// any path (the root's listing, a mount of /b, a walk of it, a path that
// climbs or hides a slash); /b's file reads as missing.
func TestServeNFSGrants(t *testing.T) {
	nfsLs, nfsCat := needProgram(t, "nfs-ls"), needProgram(t, "nfs-cat") // Debian: libnfs-utils
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--nfs", "127.0.0.1:0", "--nfs-grants", "nfs:/a:r"}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/a/x.txt", "content": "for a\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/b/secret-b.txt", "content": "secret of b\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/b/hidden-dir/z.txt", "content": "z\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	out, err := exec.CommandContext(ctx, nfsLs, "-R", nfsURL(d, "/")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "a/x.txt") {
		t.Fatalf("nfs-ls -R /: %v\n%s", err, out)
	}
	if out, err := exec.CommandContext(ctx, nfsCat, nfsURL(d, "/a/x.txt")).Output(); err != nil || string(out) != "for a\n" {
		t.Fatalf("nfs-cat /a/x.txt: %q, %v", out, err)
	}
	shown := string(out)
	// libnfs's error messages repeat the URL asked for; what must not
	// show is what only the depot knows.
	for _, p := range []string{"/b", "/b/", "/b/hidden-dir", "/a/../b", "/a/%2e%2e/b", "/a/..%2fb", "/./b"} {
		u := nfsURL(d, p)
		o, _ := exec.CommandContext(ctx, nfsLs, "-R", u).CombinedOutput()
		shown += strings.ReplaceAll(string(o), u, "URL")
	}
	for _, p := range []string{"/b/secret-b.txt", "/a/../b/secret-b.txt", "/a/%2e%2e/b/secret-b.txt", "/b/hidden-dir/z.txt"} {
		u := nfsURL(d, p)
		o, err := exec.CommandContext(ctx, nfsCat, u).CombinedOutput()
		if err == nil {
			t.Errorf("nfs-cat %s under a grant of /a: %q", p, o)
		}
		shown += strings.ReplaceAll(string(o), u, "URL")
	}
	for _, name := range []string{"secret", "hidden", "z.txt", "of b"} {
		if strings.Contains(shown, name) {
			t.Errorf("an NFS client granted /a only was shown %q:\n%s", name, shown)
		}
	}
}

// nfsRaw is a connection of github.com/willscott/go-nfs-client to the
// export of the daemon's log, with calls by handle, which its file API
// does not offer.
type nfsRaw struct {
	*nfsc.Target
	rpc *rpc.Client
}

func dialNFS(t *testing.T, d *daemon) *nfsRaw {
	t.Helper()
	m := nfsAddrRE.FindStringSubmatch(d.waitLogLine("the NFS server to start", "serving NFSv3 read-only"))
	port, _ := strconv.Atoi(m[1])
	c, err := nfsc.DialServiceAtPort("127.0.0.1", port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tgt, err := (&nfsc.Mount{Client: c}).Mount("/", rpc.AuthNull)
	if err != nil {
		t.Fatal(err)
	}
	return &nfsRaw{Target: tgt, rpc: c}
}

// handle looks p up and returns its handle.
func (c *nfsRaw) handle(t *testing.T, p string) []byte {
	t.Helper()
	_, fh, err := c.Lookup(p)
	if err != nil {
		t.Fatalf("lookup %s: %v", p, err)
	}
	return fh
}

// call sends NFSv3 procedure proc with the XDR encoding of args and
// returns the status and the rest of the reply. The client encodes calls
// by reflection, so the call's type is made for the arguments' length.
func (c *nfsRaw) call(t *testing.T, proc uint32, args ...any) (uint32, io.ReadSeeker) {
	t.Helper()
	var body bytes.Buffer
	for _, a := range args {
		if err := xdr.Write(&body, a); err != nil {
			t.Fatal(err)
		}
	}
	hdr := rpc.Header{Rpcvers: 2, Prog: nfsc.Nfs3Prog, Vers: nfsc.Nfs3Vers, Proc: proc, Cred: rpc.AuthNull, Verf: rpc.AuthNull}
	typ := reflect.StructOf([]reflect.StructField{
		{Name: "Header", Type: reflect.TypeFor[rpc.Header](), Anonymous: true},
		{Name: "Body", Type: reflect.ArrayOf(body.Len(), reflect.TypeFor[byte]())},
	})
	v := reflect.New(typ)
	v.Elem().Field(0).Set(reflect.ValueOf(hdr))
	reflect.Copy(v.Elem().Field(1), reflect.ValueOf(body.Bytes()))
	res, err := c.rpc.Call(v.Interface())
	if err != nil {
		t.Fatalf("NFS call %d: %v", proc, err)
	}
	status, err := xdr.ReadUint32(res)
	if err != nil {
		t.Fatal(err)
	}
	return status, res
}

// read sends one READ of up to 64 KiB of fh and returns the status and
// the bytes.
func (c *nfsRaw) read(t *testing.T, fh []byte) (uint32, string) {
	t.Helper()
	status, res := c.call(t, 6, fh, uint64(0), uint32(64<<10)) // READ
	if status != 0 {
		return status, ""
	}
	var r struct {
		Attr       nfsc.PostOpAttr
		Count, EOF uint32
	}
	if err := xdr.Read(res, &r); err != nil {
		t.Fatal(err)
	}
	data, err := xdr.ReadOpaque(res)
	if err != nil {
		t.Fatal(err)
	}
	return status, string(data)
}

// TestServeNFSHandlesAcrossRestart keeps NFS handles (go-nfs-client)
// across restarts of the depotfs binary, which listens on another port
// each time: a file's handle still reads it, a directory's still looks
// names up, a replaced file's old handle reads its version while the
// store keeps it and then answers NFS3ERR_STALE.
func TestServeNFSHandlesAcrossRestart(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--nfs", "127.0.0.1:0", "--keep-versions", "1"}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/h/a.txt", "content": "alpha\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/h/b.txt", "content": "bravo 1\n"})
	c := dialNFS(t, d)
	fhA, fhB, fhDir := c.handle(t, "h/a.txt"), c.handle(t, "h/b.txt"), c.handle(t, "h")

	d = d.restart()
	c = dialNFS(t, d)
	if status, got := c.read(t, fhA); status != 0 || got != "alpha\n" {
		t.Errorf("a.txt's handle after a restart: status %d, %q", status, got)
	}
	if status, _ := c.call(t, 3, fhDir, "b.txt"); status != 0 { // LOOKUP
		t.Errorf("a lookup in h's handle after a restart: status %d", status)
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/h/b.txt", "content": "bravo 2\n"})
	if status, got := c.read(t, fhB); status != 0 || got != "bravo 1\n" {
		t.Errorf("the replaced b.txt's old handle: status %d, %q; want its first version", status, got)
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/h/b.txt", "content": "bravo 3\n"})
	d = d.restart()
	c = dialNFS(t, d)
	if status, _ := c.read(t, fhB); status != 70 {
		t.Errorf("the handle of a version no longer kept: status %d, want NFS3ERR_STALE (70)", status)
	}
	if status, got := c.read(t, c.handle(t, "h/b.txt")); status != 0 || got != "bravo 3\n" {
		t.Errorf("b.txt looked up again: status %d, %q", status, got)
	}
}
