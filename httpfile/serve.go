package httpfile

import (
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
// decides them). It does not close c. A write error ends the body; the
// client sees a short response.
func Serve(w http.ResponseWriter, r *http.Request, e store.Entry, c store.Content) {
	h := w.Header()
	h.Set("ETag", ETag(c.SHA256()))
	// A response depends on the caller's credentials: shared caches keep
	// none of it.
	h.Set("Cache-Control", "private, no-cache")
	if t := mime.TypeByExtension(path.Ext(e.Path)); t != "" {
		h.Set("Content-Type", t)
	}
	http.ServeContent(bufferedWriter{w}, r, path.Base(e.Path), ModTime(e), io.NewSectionReader(c, 0, c.Size()))
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

// bufferedWriter copies a body through a pooled CopyBuffer (ServeContent
// copies with io.CopyN, which uses ReadFrom when the writer has it).
type bufferedWriter struct{ http.ResponseWriter }

// ReadFrom copies src to the response in CopyBuffer reads.
func (b bufferedWriter) ReadFrom(src io.Reader) (int64, error) {
	buf := buffers.Get().(*[]byte)
	defer buffers.Put(buf)
	return io.CopyBuffer(writerOnly{b.ResponseWriter}, src, *buf)
}

// Unwrap gives http.ResponseController the response writer underneath.
func (b bufferedWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// writerOnly hides every method but Write, so io.CopyBuffer uses the
// buffer it is given rather than a ReadFrom of the writer.
type writerOnly struct{ io.Writer }
