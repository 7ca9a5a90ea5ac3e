package nfsserver_test

import (
	"bytes"
	"io"
	"reflect"
	"strconv"
	"testing"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"github.com/willscott/go-nfs-client/nfs/xdr"
)

// goClient is a connection of github.com/willscott/go-nfs-client, a Go
// NFSv3 client independent of the server's code, to the export's root.
type goClient struct {
	*nfsc.Target
	rpc  *rpc.Client
	root []byte // the root's handle, as MOUNT returned it
}

// dial mounts dir of the server at s.
func dial(tb testing.TB, s *testServer, dir string) *goClient {
	tb.Helper()
	port, _ := strconv.Atoi(s.port)
	c, err := nfsc.DialServiceAtPort("127.0.0.1", port)
	if err != nil {
		tb.Fatalf("dial %s: %v", s.addr, err)
	}
	tb.Cleanup(func() { c.Close() })
	m := &nfsc.Mount{Client: c}
	tgt, err := m.Mount(dir, rpc.AuthNull)
	if err != nil {
		tb.Fatalf("mount %s: %v", dir, err)
	}
	_, root, err := tgt.Lookup(".")
	if err != nil {
		tb.Fatalf("lookup of the root: %v", err)
	}
	return &goClient{Target: tgt, rpc: c, root: root}
}

// Procedure numbers of NFSv3 (RFC 1813).
const (
	procGetattr     = 1
	procSetattr     = 2
	procLookup      = 3
	procRead        = 6
	procWrite       = 7
	procCreate      = 8
	procMkdir       = 9
	procSymlink     = 10
	procMknod       = 11
	procRemove      = 12
	procRmdir       = 13
	procRename      = 14
	procLink        = 15
	procReaddirplus = 17
	procCommit      = 21
)

// NFSv3 statuses the tests expect.
const (
	nfsOK       = 0
	nfsNoEnt    = 2
	nfsIO       = 5
	nfsAcces    = 13
	nfsNotDir   = 20
	nfsInval    = 22
	nfsROFS     = 30
	nfsNameLong = 63
	nfsStale    = 70
	nfsBadHdl   = 10001
)

// call sends procedure proc with the XDR encoding of args (after the RPC
// header) and returns the NFS status and the rest of the reply.
func (c *goClient) call(tb testing.TB, proc uint32, args ...any) (uint32, io.ReadSeeker) {
	tb.Helper()
	var body bytes.Buffer
	for _, a := range args {
		if err := xdr.Write(&body, a); err != nil {
			tb.Fatalf("encode %T: %v", a, err)
		}
	}
	hdr := rpc.Header{Rpcvers: 2, Prog: nfsc.Nfs3Prog, Vers: nfsc.Nfs3Vers, Proc: proc, Cred: rpc.AuthNull, Verf: rpc.AuthNull}
	res, err := c.rpc.Call(rawCall(hdr, body.Bytes()))
	if err != nil {
		tb.Fatalf("call %d: %v", proc, err)
	}
	status, err := xdr.ReadUint32(res)
	if err != nil {
		tb.Fatalf("call %d: status: %v", proc, err)
	}
	return status, res
}

// rawCall is an RPC call whose arguments are already encoded: a struct
// of the header and a fixed-length byte array, which XDR writes as is
// (its length is a multiple of 4, so there is no padding). The client
// encodes calls by reflection, so the type is made for the length.
func rawCall(hdr rpc.Header, body []byte) any {
	t := reflect.StructOf([]reflect.StructField{
		{Name: "Header", Type: reflect.TypeFor[rpc.Header](), Anonymous: true},
		{Name: "Body", Type: reflect.ArrayOf(len(body), reflect.TypeFor[byte]())},
	})
	v := reflect.New(t)
	v.Elem().Field(0).Set(reflect.ValueOf(hdr))
	reflect.Copy(v.Elem().Field(1), reflect.ValueOf(body))
	return v.Interface()
}

// lookup sends LOOKUP of name in directory dir and returns the status and
// the handle found.
func (c *goClient) lookup(tb testing.TB, dir []byte, name string) (uint32, []byte) {
	tb.Helper()
	status, res := c.call(tb, procLookup, dir, name)
	if status != nfsOK {
		return status, nil
	}
	fh, err := xdr.ReadOpaque(res)
	if err != nil {
		tb.Fatalf("lookup %s: %v", name, err)
	}
	return status, fh
}

// getattr sends GETATTR of fh.
func (c *goClient) getattr(tb testing.TB, fh []byte) (uint32, *nfsc.Fattr) {
	tb.Helper()
	status, res := c.call(tb, procGetattr, fh)
	if status != nfsOK {
		return status, nil
	}
	var a nfsc.Fattr
	if err := xdr.Read(res, &a); err != nil {
		tb.Fatalf("getattr: %v", err)
	}
	return status, &a
}

// readAll reads the file of handle fh from start to end with READ.
func (c *goClient) readAll(tb testing.TB, fh []byte) (uint32, []byte) {
	tb.Helper()
	var out []byte
	for {
		status, res := c.call(tb, procRead, fh, uint64(len(out)), uint32(1<<20))
		if status != nfsOK {
			return status, out
		}
		var r struct {
			Attr  nfsc.PostOpAttr
			Count uint32
			EOF   uint32
		}
		if err := xdr.Read(res, &r); err != nil {
			tb.Fatalf("read: %v", err)
		}
		data, err := xdr.ReadOpaque(res)
		if err != nil {
			tb.Fatalf("read data: %v", err)
		}
		out = append(out, data...)
		if r.EOF != 0 || len(data) == 0 {
			return status, out
		}
	}
}

// walkPath looks up a slash-separated path from the root, one LOOKUP per
// name, and returns the status of the first that failed.
func (c *goClient) walkPath(tb testing.TB, names ...string) (uint32, []byte) {
	tb.Helper()
	fh := c.root
	for _, n := range names {
		var status uint32
		if status, fh = c.lookup(tb, fh, n); status != nfsOK {
			return status, nil
		}
	}
	return nfsOK, fh
}

// dialMount connects a MOUNT client to port.
func dialMount(port int) (*nfsc.Mount, error) {
	c, err := nfsc.DialServiceAtPort("127.0.0.1", port)
	if err != nil {
		return nil, err
	}
	return &nfsc.Mount{Client: c}, nil
}
