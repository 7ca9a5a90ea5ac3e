package nfsserver_test

import (
	"net"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/depotfs/depotfs/nfsserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// newStore opens a bolt store in a fresh temporary directory, closed when
// the test ends.
func newStore(tb testing.TB) (*bolt.Store, string) {
	tb.Helper()
	dir := tb.TempDir()
	st, err := bolt.Open(filepath.Join(dir, "depot.db"), &bolt.Options{KeepVersions: 3})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st, dir
}

// testServer is a running NFS server and its address.
type testServer struct {
	*nfsserver.Server
	addr string
	port string
}

// serve starts an NFS server of st on a loopback port, with its handle
// table in dir; it is closed when the test ends (or by the caller).
func serve(tb testing.TB, st store.Store, dir string, opts nfsserver.Options) *testServer {
	tb.Helper()
	opts.HandleTable = filepath.Join(dir, "nfs-handles.db")
	s, err := nfsserver.New(st, &opts)
	if err != nil {
		tb.Fatalf("nfsserver.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	tb.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return &testServer{Server: s, addr: ln.Addr().String(), port: port}
}

// need skips the test when program is not installed (.ci/run installs it
// from Debian's libnfs-utils).
func need(tb testing.TB, program string) string {
	tb.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		tb.Skipf("%s not installed (Debian package libnfs-utils): %v", program, err)
	}
	return p
}

// url is a libnfs URL for path p of the export served by s.
func (s *testServer) url(p string) string {
	return "nfs://127.0.0.1" + p + "?version=3&nfsport=" + s.port + "&mountport=" + s.port
}
