package nfsserver

import (
	"encoding/binary"
	"net"
	"sync"
)

// ONC RPC numbers the gate reads (RFC 5531, RFC 1813).
const (
	progNFS    = 100003
	progMount  = 100005
	mountProcs = 5 // MOUNTPROC3_EXPORT
	nfsROFS    = 30
	lastFrag   = 1 << 31
	callHeader = 24 // xid, message type, RPC version, program, version, procedure
)

// writeProcs are the NFSv3 procedures that change something, with the
// length in 32-bit words of their failure reply's body after the status
// (all "no attributes" markers): SETATTR, WRITE, CREATE, MKDIR, SYMLINK,
// MKNOD, REMOVE, RMDIR, RENAME, LINK and COMMIT.
var writeProcs = map[uint32]int{2: 2, 7: 2, 8: 2, 9: 2, 10: 2, 11: 2, 12: 2, 13: 2, 14: 4, 15: 3, 21: 2}

// gatedConn is a client connection as go-nfs sees it. Every call of a
// procedure that writes is answered NFS3ERR_ROFS here and never reaches
// go-nfs (whose LINK reads its arguments as SYMLINK's and whose COMMIT
// answers NFS3ERR_SERVERFAULT on a read-only filesystem); a MOUNT EXPORT
// call, which go-nfs does not serve, is answered with the one export. The
// rest passes through unchanged.
//
// Read is called by go-nfs's reading goroutine only; Write by its writing
// goroutine, and by Read for the answers it gives. wmu guards the outgoing
// stream's parse state (wrem, whdr, wlast) and orders writes: an answer is
// written only between two of go-nfs's records (cond). The incoming
// buffers and parse state belong to Read.
type gatedConn struct {
	net.Conn
	s      *Server
	export string // the export's path, for EXPORT

	// incoming. Both buffers are reused from call to call: a walk is
	// thousands of small calls, and a buffer made for each read was most
	// of what the server allocated (and so most of its collector's work).
	rbuf    []byte // what the connection's reads fill
	raw     []byte // read from the connection, not yet parsed (within rbuf)
	ready   []byte // parsed and passed, for go-nfs to read
	readyb  []byte // ready's buffer, empty
	rem     int    // bytes left of the current incoming fragment
	refuse  bool   // the current record is answered here and dropped
	inside  bool   // the current record has more fragments
	xid     uint32 // the refused record's
	proc    uint32
	program uint32

	wmu   sync.Mutex
	cond  *sync.Cond // signalled when the outgoing stream reaches a record boundary
	wrem  int        // bytes left of the current outgoing fragment
	whdr  []byte     // a fragment header written in part
	wlast bool       // the current outgoing fragment ends its record

	once sync.Once
}

func newGatedConn(c net.Conn, s *Server) *gatedConn {
	g := &gatedConn{Conn: c, s: s, export: s.acc.prefix, wlast: true, rbuf: make([]byte, 64<<10)}
	g.cond = sync.NewCond(&g.wmu)
	return g
}

// Read returns the incoming records go-nfs should see.
func (g *gatedConn) Read(p []byte) (int, error) {
	for len(g.ready) == 0 {
		g.ready = g.readyb
		err := g.parse()
		g.readyb = g.ready[:0] // keeps what parse grew it to
		if err != nil {
			return 0, err
		}
		if len(g.ready) > 0 {
			break
		}
		// parse leaves at most a call's first 28 bytes unparsed (a record
		// mark and header it waits to see whole), so they fit in front.
		k := copy(g.rbuf, g.raw)
		n, err := g.Conn.Read(g.rbuf[k:])
		g.raw = g.rbuf[:k+n]
		if err != nil && n == 0 {
			return 0, err
		}
	}
	n := copy(p, g.ready)
	g.ready = g.ready[n:]
	return n, nil
}

// parse moves what g.raw holds to g.ready, dropping refused records and
// answering them.
func (g *gatedConn) parse() error {
	for {
		if g.rem > 0 {
			n := min(g.rem, len(g.raw))
			if n == 0 {
				return nil
			}
			if !g.refuse {
				g.ready = append(g.ready, g.raw[:n]...)
			}
			g.raw, g.rem = g.raw[n:], g.rem-n
			if g.rem > 0 {
				return nil
			}
			if !g.inside && g.refuse {
				g.refuse = false
				if err := g.answer(); err != nil {
					return err
				}
			}
			continue
		}
		if len(g.raw) < 4 {
			return nil
		}
		hdr := binary.BigEndian.Uint32(g.raw)
		size := int(hdr &^ lastFrag)
		startOfRecord := !g.inside
		if startOfRecord && size >= callHeader {
			if len(g.raw) < 4+callHeader {
				return nil // wait for the call's header
			}
			h := g.raw[4:]
			xid, typ, prog, vers, proc := binary.BigEndian.Uint32(h), binary.BigEndian.Uint32(h[4:]),
				binary.BigEndian.Uint32(h[12:]), binary.BigEndian.Uint32(h[16:]), binary.BigEndian.Uint32(h[20:])
			_, writes := writeProcs[proc]
			if typ == 0 && ((prog == progNFS && vers == 3 && writes) || (prog == progMount && proc == mountProcs)) {
				g.refuse, g.xid, g.proc, g.program = true, xid, proc, prog
			}
		}
		if !g.refuse {
			g.ready = append(g.ready, g.raw[:4]...)
		}
		g.inside = hdr&lastFrag == 0
		g.raw, g.rem = g.raw[4:], size
		if size == 0 && !g.inside && g.refuse {
			g.refuse = false
			if err := g.answer(); err != nil {
				return err
			}
		}
	}
}

// answer writes the reply to the record just dropped.
func (g *gatedConn) answer() error {
	w := []uint32{0, g.xid, 1, 0, 0, 0, 0} // mark, xid, REPLY, MSG_ACCEPTED, AUTH_NULL verifier, SUCCESS
	var body []byte
	if g.program == progMount {
		// exports: one entry, the export's path, no groups.
		w = append(w, 1)
		body = binary.BigEndian.AppendUint32(nil, uint32(len(g.export)))
		body = append(body, g.export...)
		body = append(body, make([]byte, (4-len(g.export)%4)%4)...)
		body = binary.BigEndian.AppendUint32(body, 0) // groups: none
		body = binary.BigEndian.AppendUint32(body, 0) // no next export
	} else {
		w = append(w, nfsROFS)
		for range writeProcs[g.proc] {
			w = append(w, 0)
		}
	}
	msg := make([]byte, 0, 4*len(w)+len(body))
	for _, v := range w {
		msg = binary.BigEndian.AppendUint32(msg, v)
	}
	msg = append(msg, body...)
	binary.BigEndian.PutUint32(msg, lastFrag|uint32(len(msg)-4))

	g.wmu.Lock()
	defer g.wmu.Unlock()
	for g.wrem > 0 || len(g.whdr) > 0 || !g.wlast {
		g.cond.Wait()
	}
	_, err := g.Conn.Write(msg)
	return err
}

// Write passes go-nfs's replies on, following their record marks so an
// answer from Read is never written into the middle of one.
func (g *gatedConn) Write(p []byte) (int, error) {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	n, err := g.Conn.Write(p)
	for b := p[:n]; len(b) > 0; {
		if g.wrem > 0 {
			k := min(g.wrem, len(b))
			g.wrem -= k
			b = b[k:]
			continue
		}
		k := min(4-len(g.whdr), len(b))
		g.whdr = append(g.whdr, b[:k]...)
		b = b[k:]
		if len(g.whdr) == 4 {
			hdr := binary.BigEndian.Uint32(g.whdr)
			g.wrem, g.wlast, g.whdr = int(hdr&^lastFrag), hdr&lastFrag != 0, g.whdr[:0]
		}
	}
	if g.wrem == 0 && len(g.whdr) == 0 && g.wlast {
		g.cond.Broadcast()
	}
	return n, err
}

// Close forgets the connection in the server and closes it. It also wakes
// an answer waiting for a boundary that will never come.
func (g *gatedConn) Close() error {
	g.once.Do(func() {
		g.s.mu.Lock()
		delete(g.s.conns, g)
		g.s.mu.Unlock()
	})
	err := g.Conn.Close()
	g.wmu.Lock()
	g.wrem, g.whdr, g.wlast = 0, g.whdr[:0], true
	g.cond.Broadcast()
	g.wmu.Unlock()
	return err
}
