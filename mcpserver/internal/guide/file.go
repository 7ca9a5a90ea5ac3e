package guide

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// fileArgs are the arguments shared by guide_cache_file and guide_read_file:
// where a file goes, its bytes and its metadata.
type fileArgs struct {
	path     string // clean depot path; for a filename-only upload, set by place
	filename string // clean name of a filename-only upload, else ""
	data     []byte
	encoding string
	sha256   string // declared hash, lowercase; "" when not given
	mtime    time.Time
	mode     fs.FileMode
	ttl      time.Duration // ttl_seconds; 0 when not given
	pin      bool
	cond     tool.Condition // if_revision, if_absent: only for the tools that take them
}

// maxTTLSeconds bounds ttl_seconds: a hundred years.
const maxTTLSeconds = 100 * 365 * 24 * 60 * 60

// decodeFile reads the file arguments from o. Content is limited to max
// decoded bytes.
func decodeFile(o *args.Object, max int64) fileArgs {
	a := decodeTarget(o)
	a.data, a.encoding = o.Content("content", max)
	a.decodeMeta(o)
	return a
}

// decodeTarget reads where a file goes: path, or filename.
func decodeTarget(o *args.Object) fileArgs {
	var a fileArgs
	hasPath, hasName := o.Has("path"), o.Has("filename")
	switch {
	case hasPath && hasName:
		o.Problems().Addf("path", "give either path or filename, not both: filename alone stores the file under the uploads directory")
	case hasName:
		if name, ok := o.Str("filename", true); ok {
			clean, err := args.UploadName(name)
			if err != nil {
				o.Problems().Add(o.Name("filename"), err)
			} else {
				a.filename = clean
			}
		}
	default:
		if p, ok := o.DepotPath("path", false); ok {
			if p == depotpath.Root {
				o.Problems().Addf("path", "names the depot root, which is a directory; give a file path such as \"/notes/todo.txt\"")
			} else {
				a.path = p
			}
		} else if !hasPath {
			o.Problems().Addf("path", "required string argument is missing (or give filename instead)")
		}
	}
	return a
}

// decodeMeta reads a file's metadata: sha256, mtime, mode, ttl_seconds
// and pin.
func (a *fileArgs) decodeMeta(o *args.Object) {
	a.sha256, _ = o.SHA256("sha256", false)
	a.mtime, _ = o.MTime("mtime")
	a.mode, _ = o.Mode("mode")
	a.ttl = time.Duration(o.Count("ttl_seconds", 0)) * time.Second
	a.pin = o.Bool("pin", false)
}

// expires returns when the file expires if stored at now: after its
// ttl_seconds; for a filename-only upload without ttl_seconds and not
// pinned, after uploadTTL (when positive); otherwise never (zero).
func (a *fileArgs) expires(now time.Time, uploadTTL time.Duration) time.Time {
	switch {
	case a.ttl > 0:
		return now.Add(a.ttl)
	case a.filename != "" && !a.pin && uploadTTL > 0:
		return now.Add(uploadTTL)
	}
	return time.Time{}
}

// request is the store request that writes a's file with content data
// (nil when it streams or comes in chunks) and hash sum ("": the store's),
// for c through source.
func (s *tools) request(c *tool.Call, a *fileArgs, source, sum string, data []byte) store.PutRequest {
	req := store.PutRequest{
		Path: a.path, Data: data, SHA256: sum, Mode: a.mode, MTime: a.mtime, Encoding: a.encoding,
		Source: source, Writer: c.Who().String(), Expires: a.expires(time.Now(), s.opts.UploadTTL), Pinned: a.pin,
	}
	a.cond.Apply(&req)
	return req
}

// checkFileSize refuses a file larger than max bytes (0: no limit) before
// it reaches the store.
func checkFileSize(p string, size, max int64) error {
	if max > 0 && size > max {
		return fmt.Errorf("%w: %s: a file of %d bytes exceeds the depot's file size limit of %d bytes", store.ErrLimit, p, size, max)
	}
	return nil
}

// verify hashes the content and checks it against its declared hash,
// recording a mismatch under field; it returns the content's hash.
func (a *fileArgs) verify(probs *args.Problems, field string) (string, bool) {
	sum := sha256.Sum256(a.data)
	got := hex.EncodeToString(sum[:])
	if a.sha256 != "" && a.sha256 != got {
		probs.Addf(field, "the content (%d bytes after decoding) hashes to %s, not %s", len(a.data), got, a.sha256)
		return got, false
	}
	return got, true
}

// place sets the path of a filename-only upload from the content hash: the
// uploads directory, the first 16 hex digits of the hash, the name.
func (a *fileArgs) place(uploads, sum string) error {
	if a.filename == "" {
		return nil
	}
	p, err := depotpath.Clean(uploads + "/" + sum[:16] + "/" + a.filename)
	if err != nil {
		return fmt.Errorf("filename: %w", err)
	}
	a.path = p
	return nil
}

// fileData is the reply data of a completed write.
type fileData struct {
	Status    string `json:"status"`
	Key       string `json:"key"`
	Path      string `json:"path"`
	MountPath string `json:"mount_path,omitempty"`
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
	Updates   uint64 `json:"updates"`
	Revision  uint64 `json:"revision"`
	MTime     string `json:"mtime"`
	Mode      string `json:"mode,omitempty"`
	Encoding  string `json:"encoding"`
	Filename  string `json:"filename,omitempty"`
	Expires   string `json:"expires,omitempty"`
	Pinned    bool   `json:"pinned"`
	// Evicted reports the content this write evicted to make room.
	Evicted *evictedData `json:"evicted,omitempty"`
	// Upload is the final progress of a chunked upload.
	Upload *uploadData `json:"upload,omitempty"`
}

// evictedData is a write's eviction report in a reply.
type evictedData struct {
	Count int      `json:"count"`
	Bytes int64    `json:"bytes"`
	Paths []string `json:"paths"`
}
