package guide

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/tenant"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

const toolBeginUpload = "guide_begin_upload"

// UploadPath is where the HTTP listener serves raw uploads: a PUT to
// UploadPath + token.
const UploadPath = "/upload/"

// maxPendingUploads bounds the raw uploads outstanding (begun, not yet
// sent or expired) at once, of all identities: far above what a few
// identities hold at Env.MaxRawUploadsPerIdentity each.
const maxPendingUploads = 16384

// beginData is guide_begin_upload's reply data.
type beginData struct {
	UploadURL        string `json:"upload_url"`
	Method           string `json:"method"`
	Path             string `json:"path,omitempty"`
	Filename         string `json:"filename,omitempty"`
	Expires          string `json:"expires"`
	ExpiresInSeconds int    `json:"expires_in_seconds"`
	MaxBytes         int64  `json:"max_bytes,omitempty"`
}

// rawUpload is a begun raw upload waiting for its PUT.
type rawUpload struct {
	who     identity.Identity
	file    fileArgs // without data
	format  string   // formatFile, or the archive format unpacked into file.path
	size    int64    // announced; -1: not announced
	expires time.Time
}

// Uploads holds the raw uploads begun and not yet sent. It is safe for
// concurrent use.
type Uploads struct {
	rt    *tool.Runtime
	tools *tools    // set by Tools
	begin tool.Tool // guide_begin_upload, whose pipeline a PUT runs in; set by Tools
	mu    sync.Mutex
	begun map[string]*rawUpload // by token
}

// NewUploads returns the raw uploads of the tools served through rt; pass
// it to Tools, and serve it at UploadPath on the HTTP listener.
func NewUploads(rt *tool.Runtime) *Uploads {
	return &Uploads{rt: rt, begun: map[string]*rawUpload{}}
}

// beginUpload checks where a raw upload goes and returns the URL to PUT
// its bytes to.
func (s *tools) beginUpload(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	up := &rawUpload{size: -1, who: c.Who()}
	if o := c.Decode(raw); o != nil {
		up.file = decodeTarget(o)
		up.size = o.Count("size", -1)
		up.format = o.Choice("format", formatFile)
		up.file.decodeMeta(o)
		up.file.cond = tool.DecodeCondition(o)
		o.Finish()
		if up.format != formatFile && up.file.filename != "" {
			c.Args().Addf("filename", "an archive is unpacked into a directory: give its path instead")
		}
		if up.format != formatFile && up.file.cond.Set() {
			c.Args().Addf("format", "an archive is unpacked into a directory, which if_revision and if_absent cannot guard: send the file itself (format \"file\"), or leave them out")
		}
		if up.file.filename != "" && up.file.sha256 == "" && c.Args().OK() {
			c.Args().Addf("sha256", "is required with filename: the file's path under %s is made from its hash", s.opts.Uploads)
		}
	}
	c.Path = up.file.path
	if err := c.Args().Err(); err != nil {
		return tool.Reply{}, err
	}
	if err := up.file.place(s.opts.Uploads, up.file.sha256); err != nil {
		return tool.Reply{}, err
	}
	c.Path = up.file.path
	// An archive's size is checked against what the depot can take when
	// it arrives; a size not announced (-1) passes.
	if err := checkFileSize(up.file.path, up.size, s.opts.MaxFileBytes); err != nil && up.format == formatFile {
		return tool.Reply{}, err
	}
	base := tool.BaseURL(ctx)
	if base == "" {
		return tool.Reply{}, &tool.Refusal{Type: tool.ErrorLimit,
			Message:     "a raw upload needs depotfs's HTTP listener, and this session has none (it runs over stdio)",
			Instruction: "Send the file with guide_read_file in chunks (upload_id, chunk_index, chunk_count), or ask the user to run depotfs push. Nothing was stored."}
	}
	if err := c.Store().CheckWrite(up.file.path); err != nil {
		return tool.Reply{}, err
	}
	if err := up.file.cond.Check(ctx, c.Store(), up.file.path); err != nil {
		return tool.Reply{}, err
	}
	now := s.opts.Now()
	up.expires = now.Add(s.opts.UploadURLTTL)
	token, err := s.uploads.add(up, now)
	if err != nil {
		return tool.Reply{}, err
	}
	c.Status = "begun"
	d := &beginData{
		UploadURL: base + UploadPath + token, Method: http.MethodPut,
		Path: up.file.path, Filename: up.file.filename,
		Expires:          up.expires.UTC().Format(time.RFC3339),
		ExpiresInSeconds: max(int(s.opts.UploadURLTTL.Seconds()), 1),
		MaxBytes:         s.opts.MaxFileBytes,
	}
	return tool.Reply{
		Data: d,
		Message: fmt.Sprintf("Send the bytes of %s with one HTTP PUT to upload_url within %d seconds (for example: curl -T FILE %s); its response is guide_cache_file's reply. The URL works once.",
			up.file.path, d.ExpiresInSeconds, d.UploadURL),
	}, nil
}

// add registers up and returns its token, refusing when too many uploads
// are outstanding.
func (u *Uploads) add(up *rawUpload, now time.Time) (string, error) {
	b := make([]byte, 32)
	rand.Read(b) // crypto/rand.Read never fails
	token := hex.EncodeToString(b)
	u.mu.Lock()
	defer u.mu.Unlock()
	for t, p := range u.begun {
		if !now.Before(p.expires) {
			delete(u.begun, t)
		}
	}
	if n, limit := u.heldLocked(tenant.Of(up.who)), u.tools.opts.MaxRawUploadsPerIdentity; n >= limit {
		return "", &tool.Refusal{Type: tool.ErrorLimit,
			Message:     fmt.Sprintf("your tenant (%s: every credential with your grants) has begun %d raw uploads and not sent them, the most one tenant may hold (--max-raw-uploads-per-identity)", tenant.Of(up.who), limit),
			Instruction: "Send the uploads you began (or let them expire) before beginning more. Nothing was stored."}
	}
	if len(u.begun) >= maxPendingUploads {
		return "", &tool.Refusal{Type: tool.ErrorLimit,
			Message:     fmt.Sprintf("%d raw uploads are begun and not yet sent, the most depotfs keeps", maxPendingUploads),
			Instruction: "Send the uploads you began (or let them expire) before beginning more. Nothing was stored."}
	}
	u.begun[token] = up
	return token, nil
}

// heldLocked returns how many raw uploads the tenant key has begun
// and not sent. u.mu is held.
func (u *Uploads) heldLocked(key string) int {
	n := 0
	for _, p := range u.begun {
		if tenant.Of(p.who) == key {
			n++
		}
	}
	return n
}

// Held returns how many raw uploads the tenant key has begun and
// not sent (expired ones included until the next begin sweeps them).
func (u *Uploads) Held(key string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.heldLocked(key)
}

// take removes and returns the upload of token for who: a token works once,
// before it expires, for the identity that began the upload. To any other
// identity the token is unknown, as a made-up one is: it learns nothing
// of the upload and cannot use it up, and the refusal is audited as
// denied with the path (c notes it) and the identity it belongs to.
func (u *Uploads) take(c *tool.Call, token string, who identity.Identity, now time.Time) (*rawUpload, error) {
	u.mu.Lock()
	up, ok := u.begun[token]
	other := ok && !sameCaller(up.who, who)
	if !other {
		delete(u.begun, token)
	}
	u.mu.Unlock()
	again := "Call guide_begin_upload again for a new upload_url, then send the bytes to it once. Nothing was stored."
	unknown := &tool.Refusal{Type: tool.ErrorNotFound, Message: "this upload URL is unknown or was already used", Instruction: again,
		Deny: true, Audit: "a PUT to an upload URL that was never issued, or was already used"}
	if ok {
		// Every record of a PUT on a known URL names where it was to go,
		// refused or not, so "audit query --path" finds it.
		c.Note(up.file.path)
	}
	switch {
	case !ok:
		return nil, unknown
	case other:
		unknown.Audit = "a PUT to an upload URL issued to another identity (" + up.who.String() + ")"
		return nil, unknown
	case !now.Before(up.expires):
		return nil, &tool.Refusal{Type: tool.ErrorNotFound, Message: "this upload URL expired at " + up.expires.UTC().Format(time.RFC3339), Instruction: again}
	}
	return up, nil
}

// sameCaller reports whether the identity of a PUT is the one that began
// the upload: the same authenticated subject, or for unauthenticated local
// callers (whose subject is a connection's address) the same transport.
func sameCaller(began, put identity.Identity) bool {
	if began.Authenticated() || put.Authenticated() {
		return began.Method == put.Method && began.Subject == put.Subject && began.Transport == put.Transport
	}
	return began.Transport == put.Transport && began.Method == put.Method
}

// ServeHTTP takes the PUT of a raw upload at UploadPath + token: the bytes
// stream into the store, and once they are committed and the mount shows
// them the response is guide_cache_file's reply (the JSON envelope). Every
// PUT, refused or not, runs in guide_begin_upload's pipeline (tool.Serve):
// counted, audited and logged as a call of it, under the same rules.
func (u *Uploads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPut)
		http.Error(w, "send the file's bytes with PUT", http.StatusMethodNotAllowed)
		return
	}
	token := strings.TrimPrefix(r.URL.Path, UploadPath)
	res, ok := u.rt.Serve(r.Context(), u.begin, func(c *tool.Call) (tool.Reply, error) {
		return u.put(r, c, token)
	})
	status := http.StatusOK
	if !ok {
		status = statusOf(res)
	}
	body, _ := res.StructuredContent.(json.RawMessage)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// put streams the request's body into the store for the upload of token.
func (u *Uploads) put(r *http.Request, c *tool.Call, token string) (tool.Reply, error) {
	s := u.tools
	up, err := u.take(c, token, c.Who(), s.opts.Now())
	if err != nil {
		return tool.Reply{}, err
	}
	a := &up.file
	c.Path = a.path
	size := up.size
	if r.ContentLength >= 0 {
		if size >= 0 && size != r.ContentLength {
			return tool.Reply{}, bodyRefused(fmt.Sprintf("the PUT for %s carries %d bytes (its Content-Length); guide_begin_upload announced %d", a.path, r.ContentLength, size))
		}
		size = r.ContentLength
	}
	if up.format != formatFile {
		return u.unpack(r.Context(), c, up, r.Body, size)
	}
	if err := checkFileSize(a.path, size, s.opts.MaxFileBytes); err != nil { // -1: not known yet
		return tool.Reply{}, err
	}
	req := s.request(c, a, toolBeginUpload, a.sha256, nil)
	req.Encoding = "raw"
	// Not hashed here: the store hashes what it stores, and checks it
	// against a declared sha256.
	body := &countingReader{r: r.Body}
	res, err := c.Store().PutStream(r.Context(), req, body, size)
	switch {
	case err == nil:
	case body.err != nil:
		return tool.Reply{}, bodyRefused(fmt.Sprintf("reading the body of the PUT for %s: %v (%d bytes arrived)", a.path, body.err, body.n))
	case errors.Is(err, store.ErrUpload):
		// The store names the size mismatch in the terms of a chunked
		// upload; the agent sent one PUT.
		got := fmt.Sprintf("%d bytes", body.n)
		if body.n > size {
			got = fmt.Sprintf("more than %d bytes", size)
		}
		return tool.Reply{}, bodyRefused(fmt.Sprintf("the PUT for %s brought %s; %d were announced", a.path, got, size))
	default:
		return tool.Reply{}, &tool.StoreError{Op: "put", Path: a.path, Err: a.cond.Conflict(r.Context(), c.Store(), a.path, err)}
	}
	c.Size, c.SHA256 = res.Entry.Size, res.Entry.SHA256
	ctx, cancel := s.opts.CommitContext(r.Context())
	defer cancel()
	return s.stored(ctx, c, res, a.filename, res.Entry.Size), nil
}

// putStatus is the HTTP status of a refused PUT by the type of its
// envelope's error; any other type is 500.
var putStatus = map[tool.ErrorType]int{
	tool.ErrorValidation:  http.StatusBadRequest,
	tool.ErrorConflict:    http.StatusBadRequest,
	tool.ErrorSecurity:    http.StatusForbidden,
	tool.ErrorNotFound:    http.StatusNotFound,
	tool.ErrorLimit:       http.StatusRequestEntityTooLarge,
	tool.ErrorRateLimited: http.StatusTooManyRequests,
}

// statusOf is the HTTP status of a refused PUT, from its envelope's error.
func statusOf(res *mcp.CallToolResult) int {
	raw, _ := res.StructuredContent.(json.RawMessage)
	var env tool.Envelope
	switch {
	case json.Unmarshal(raw, &env) != nil || env.Error == nil:
		return http.StatusInternalServerError
	case env.Error.Type == tool.ErrorSystem && env.Error.RetryAfter > 0:
		return http.StatusServiceUnavailable
	}
	return cmp.Or(putStatus[env.Error.Type], http.StatusInternalServerError)
}
