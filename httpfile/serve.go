package httpfile

import (
	"cmp"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/depotfs/depotfs/store"
)

// CopyBuffer is the size of the buffer a response is copied through: one
// store chunk (1 MiB by default), so each read of the content touches
// one chunk in one read transaction. net/http's own 32 KiB made 32 reads
// of every chunk.
const CopyBuffer = 1 << 20

// buffers holds copy buffers between requests; a request holds one while
// it sends its body.
var buffers = sync.Pool{New: func() any { b := make([]byte, CopyBuffer); return &b }}

// ETag is the entity tag of content whose SHA-256 is sum: the hash,
// quoted. Equal tags mean equal bytes, whatever the path or revision.
func ETag(sum string) string { return `"` + sum + `"` }

// Serve answers a GET or HEAD of file e, whose content c holds: ranges,
// ETag, Last-Modified, Content-Type (from the name's extension, else
// sniffed), and the conditional headers (304, 412, 206, 416 as net/http
// decides them). It does not close c. It returns the error of a content
// read that failed, if any: one that fails before the first byte of the
// body is answered by Fail instead of the file (its headers are held back
// until then), one that fails later ends the body short (net/http closes
// a connection whose body is shorter than its Content-Length, so the
// client sees the failure). A write error also ends the body.
func Serve(w http.ResponseWriter, r *http.Request, e store.Entry, c store.Content) error {
	h := w.Header()
	h.Set("ETag", ETag(c.SHA256()))
	// A response depends on the caller's credentials: shared caches keep
	// none of it.
	h.Set("Cache-Control", "private, no-cache")
	if t := mime.TypeByExtension(path.Ext(e.Path)); t != "" {
		h.Set("Content-Type", t)
	} else {
		// Sniffed here, as ServeContent would, because ServeContent
		// answers a failed read with the error's own text.
		var head [sniffLen]byte
		n, err := c.ReadAt(head[:], 0)
		if err != nil && err != io.EOF {
			Fail(w, e.Path, err)
			return err
		}
		h.Set("Content-Type", http.DetectContentType(head[:n]))
	}
	rw := &response{ResponseWriter: w, path: e.Path}
	http.ServeContent(rw, r, path.Base(e.Path), ModTime(e), io.NewSectionReader(c, 0, c.Size()))
	rw.send()
	return rw.err
}

// sniffLen is how much of a file http.DetectContentType looks at.
const sniffLen = 512

// Fail answers a request whose content could not be read at depot path
// p, before the response has begun: 500 in every case, with the words of
// store.CorruptMessage for content that failed its integrity check. 500
// because the failure is the server's and not the request's; 503, which
// other store failures answer, says "retry later", and for damaged
// content every retry fails the same way until the operator restores it.
// The store has already counted and logged the damaged chunk.
func Fail(w http.ResponseWriter, p string, err error) {
	h := w.Header()
	for _, k := range []string{"Content-Length", "Content-Range", "ETag", "Last-Modified", "Accept-Ranges", "Content-Type"} {
		h.Del(k)
	}
	if errors.Is(err, store.ErrCorrupt) {
		http.Error(w, store.CorruptMessage(p), http.StatusInternalServerError)
		return
	}
	http.Error(w, "depotfs could not read the depot; retry later", http.StatusInternalServerError)
}

// ModTime is the Last-Modified of e: its mtime, else its last change,
// else its creation; the epoch (which net/http leaves out) for none.
func ModTime(e store.Entry) time.Time {
	for _, t := range []time.Time{e.MTime, e.Updated, e.Created} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Unix(0, 0)
}

// response holds ServeContent's status back until the body's first read
// has succeeded, so that a read failing at once is answered by Fail
// rather than by a status that promised the file; it copies the body
// through a pooled CopyBuffer (ServeContent copies with io.CopyN, which
// uses ReadFrom when the writer has it). One request's, not shared.
type response struct {
	http.ResponseWriter
	path   string
	status int   // the status ServeContent gave, not yet sent; 0 for none
	sent   bool  // the status has gone out
	err    error // the content read that failed
}

// WriteHeader keeps code until the body begins.
func (w *response) WriteHeader(code int) {
	if !w.sent && w.status == 0 {
		w.status = code
	}
}

// send writes the status held back, once.
func (w *response) send() {
	if !w.sent {
		w.sent = true
		w.ResponseWriter.WriteHeader(cmp.Or(w.status, http.StatusOK))
	}
}

// Write sends the status, then p.
func (w *response) Write(p []byte) (int, error) {
	w.send()
	return w.ResponseWriter.Write(p)
}

// ReadFrom copies src to the response in CopyBuffer reads, answering
// with Fail instead when the first read fails before a byte.
func (w *response) ReadFrom(src io.Reader) (int64, error) {
	buf := buffers.Get().(*[]byte)
	defer buffers.Put(buf)
	n, err := io.ReadAtLeast(src, *buf, 1)
	if err != nil && n == 0 {
		if err == io.EOF {
			return 0, nil
		}
		w.err = err
		if !w.sent {
			w.sent = true
			Fail(w.ResponseWriter, w.path, err)
		}
		return 0, err
	}
	w.send()
	m, werr := w.ResponseWriter.Write((*buf)[:n])
	if werr != nil {
		return int64(m), werr
	}
	rest, err := io.CopyBuffer(writerOnly{w.ResponseWriter}, readerOnly{src, w}, *buf)
	return int64(m) + rest, err
}

// Unwrap gives http.ResponseController the response writer underneath.
func (w *response) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// readerOnly is a body's source that notes its read error in the
// response, for Serve to return.
type readerOnly struct {
	io.Reader
	w *response
}

func (r readerOnly) Read(p []byte) (int, error) {
	n, err := r.Reader.Read(p)
	if err != nil && err != io.EOF {
		r.w.err = err
	}
	return n, err
}

// writerOnly hides every method but Write, so io.CopyBuffer uses the
// buffer it is given rather than a ReadFrom of the writer.
type writerOnly struct{ io.Writer }
