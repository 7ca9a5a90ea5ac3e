package nfsserver

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
)

// chunkConn is a client connection that delivers a byte stream in reads
// of at most size bytes, starting over at its end when loop is set, and
// keeps what is written to it.
type chunkConn struct {
	net.Conn
	in      []byte
	off     int
	size    int
	loop    bool
	written bytes.Buffer
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if c.off == len(c.in) {
		if !c.loop {
			return 0, io.EOF
		}
		c.off = 0
	}
	n := copy(p[:min(len(p), c.size)], c.in[c.off:])
	c.off += n
	return n, nil
}

func (c *chunkConn) Write(p []byte) (int, error) { return c.written.Write(p) }

// call is one RPC call record of program prog, procedure proc, with an
// argument of n bytes.
func call(xid, prog, proc uint32, n int) []byte {
	var b []byte
	for _, v := range []uint32{lastFrag | uint32(callHeader+16+n), xid, 0, 2, prog, 3, proc, 0, 0, 0, 0} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return append(b, bytes.Repeat([]byte{byte(xid)}, n)...)
}

func TestGatePassesRecordsSplitAnywhere(t *testing.T) {
	getattr, write, lookup := call(1, progNFS, 1, 40), call(2, progNFS, 7, 100), call(3, progNFS, 3, 3000)
	stream := append(append(append([]byte{}, getattr...), write...), lookup...)
	for _, size := range []int{1, 3, 7, 29, 4096, 64 << 10} {
		c := &chunkConn{in: stream, size: size}
		g := newGatedConn(c, &Server{acc: access{prefix: "/"}})
		got, err := io.ReadAll(g)
		if err != nil {
			t.Fatalf("reads of %d bytes: %v", size, err)
		}
		if want := append(append([]byte{}, getattr...), lookup...); !bytes.Equal(got, want) {
			t.Errorf("reads of %d bytes: go-nfs saw %d bytes, want the %d of the two reads", size, len(got), len(want))
		}
		if w := c.written.Bytes(); len(w) < 32 || binary.BigEndian.Uint32(w[4:]) != 2 || binary.BigEndian.Uint32(w[28:]) != nfsROFS {
			t.Errorf("reads of %d bytes: answer to WRITE %x, want xid 2 and NFS3ERR_ROFS", size, w)
		}
	}
}

// A walk is thousands of small calls: passing one on allocates nothing
// once the connection's buffers exist.
func TestGateReadAllocatesNothing(t *testing.T) {
	rec := call(1, progNFS, 3, 64)
	g := newGatedConn(&chunkConn{in: rec, size: 64 << 10, loop: true}, &Server{acc: access{prefix: "/"}})
	p := make([]byte, len(rec))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := io.ReadFull(g, p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations a call, want 0", allocs)
	}
}
