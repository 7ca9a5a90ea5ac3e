package main

import (
	"archive/tar"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/depotfs/depotfs/internal/beneath"
)

// Bounds of one tar stream of a tree. A larger tree is sent as several,
// each unpacked by the server as its own atomic change, so that no store
// limit on one change (the NATS servers' atomic batch holds 1000 records
// by default) is met by the user. A batch refused as over a limit is sent
// again as two halves, and the smaller count holds for the rest of the
// push.
const (
	pushBatchEntries = 1000
	pushBatchBytes   = 256 << 20
)

// pusher sends the PATHs of one push over one MCP session and one HTTP
// client, whose connections every PUT shares. It is used by one goroutine.
type pusher struct {
	c      *client.Client
	hc     *http.Client
	origin *url.URL // --url: credentials go to its scheme, host and port only
	token  string
	prog   *progress
	// batchEntries and batchBytes are the most entries and bytes one tar
	// stream holds now.
	batchEntries int
	batchBytes   int64
}

// refusal is the server's refusal of a call or a PUT, with its error type.
type refusal struct {
	typ   string // the envelope's error type: "limit", "security", ...
	msg   string
	retry int // seconds to wait before sending again, for "rate_limited"
}

func (r *refusal) Error() string { return r.typ + " error: " + r.msg }

// sameOrigin reports whether u has the scheme, host and port of o.
func sameOrigin(u, o *url.URL) bool {
	return strings.EqualFold(u.Scheme, o.Scheme) && strings.EqualFold(u.Hostname(), o.Hostname()) && port(u) == port(o)
}

// port is u's port, or its scheme's default.
func port(u *url.URL) string {
	return cmp.Or(u.Port(), map[string]string{"https": "443", "http": "80"}[strings.ToLower(u.Scheme)])
}

// begin calls guide_begin_upload and returns the URL to PUT to, refusing
// one that is not at --url's origin: the PUT carries the credentials.
func (p *pusher) begin(ctx context.Context, args map[string]any) (string, error) {
	var begun struct {
		UploadURL string `json:"upload_url"`
	}
	if err := callGuide(ctx, p.c, "guide_begin_upload", args, &begun); err != nil {
		return "", err
	}
	u, err := url.Parse(begun.UploadURL)
	if err != nil {
		return "", fmt.Errorf("guide_begin_upload: upload_url %q: %w", begun.UploadURL, err)
	}
	if !sameOrigin(u, p.origin) {
		return "", fmt.Errorf("the server handed out the upload URL %s://%s/…, which is not at --url's scheme, host and port (%s://%s); "+
			"depotfs push sends credentials nowhere else, so nothing was sent. Behind a proxy, start depotfs serve with --public-url %s://%s",
			u.Scheme, u.Host, p.origin.Scheme, p.origin.Host, p.origin.Scheme, p.origin.Host)
	}
	return u.String(), nil
}

// put sends body (size bytes, or -1) to upload and returns the reply's
// data. It returns only once the transport has closed body, so what was
// read from it is final; then bodyErr, if it returns non-nil, tells why
// the body stopped, and is the error whatever the transport made of it.
func (p *pusher) put(ctx context.Context, upload string, body io.Reader, size int64, bodyErr func() error) (json.RawMessage, error) {
	b := &closeSignal{r: body, closed: make(chan struct{})}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, upload, b)
	if err != nil {
		return nil, err
	}
	req.ContentLength = size
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := p.hc.Do(req)
	var data json.RawMessage
	if err == nil {
		data, err = readReply(resp)
	} else {
		err = fmt.Errorf("PUT: %w", err)
	}
	select {
	case <-b.closed:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if e := bodyErr(); e != nil {
		return nil, e
	}
	return data, err
}

// readReply reads and closes a PUT's reply and returns its data.
func readReply(resp *http.Response) (json.RawMessage, error) {
	defer resp.Body.Close()
	var env envelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return nil, fmt.Errorf("PUT: HTTP %d with an unreadable reply: %w", resp.StatusCode, err)
	}
	return env.result(fmt.Errorf("PUT: HTTP %d", resp.StatusCode))
}

// closeSignal is a request body that says when the transport closed it,
// which it does after its last read.
type closeSignal struct {
	r      io.Reader
	closed chan struct{}
	once   sync.Once
}

func (c *closeSignal) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *closeSignal) Close() error {
	var err error
	c.once.Do(func() {
		if rc, ok := c.r.(io.Closer); ok {
			err = rc.Close()
		}
		close(c.closed)
	})
	return err
}

// pushOne sends one PATH.
func (p *pusher) pushOne(ctx context.Context, item *pushItem) pushed {
	r := pushed{Local: item.local, Path: item.dest}
	push := p.pushFile
	if item.st.Mode.IsDir() {
		push = p.pushTree
	}
	if err := push(ctx, item, &r); err != nil {
		r.Error = err.Error()
	}
	return r
}

// pushFile sends a file PATH with one PUT, with its mode and mtime.
func (p *pusher) pushFile(ctx context.Context, item *pushItem, r *pushed) error {
	// Sent as it is now, if it was rewritten since it was planned.
	st, err := beneath.Fstat(item.f)
	if err == nil && !st.Mode.IsRegular() {
		err = fmt.Errorf("%w since it planned: it is %s now", errChanged, typeName(st.Mode))
	}
	if err != nil {
		return err
	}
	// The hash is declared: the server then writes each chunk once, under
	// the content's address, instead of staging it under a random key and
	// copying it there once the hash is known (and, in a sealed depot,
	// opening and sealing it again), and writes nothing of content it
	// already has. It refuses bytes that do not match.
	sum, err := fileSum(item.f, item.local, st.Size)
	if err != nil {
		return err
	}
	args := map[string]any{"path": item.dest, "size": st.Size, "sha256": sum, "mtime": st.MTime.UTC().Format(time.RFC3339Nano)}
	if perm := st.Mode.Perm(); perm != 0 {
		args["mode"] = fmt.Sprintf("%04o", perm)
	}
	var data json.RawMessage
	for tries := 0; ; {
		upload, err := p.begin(ctx, args)
		if err != nil {
			return err
		}
		var sent int64
		body := newSteadyReader(item.f, item.local, st, p.prog, &sent)
		data, err = p.put(ctx, upload, body, st.Size, func() error { return body.failed })
		if err == nil {
			break
		}
		p.prog.bytes.Add(-sent)
		again, err := p.afterRate(ctx, err, nil, &tries)
		if !again {
			return err
		}
		if _, err := item.f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("reading it again: %w", err)
		}
	}
	p.prog.files.Add(1)
	r.Reply, r.Files, r.Bytes = data, 1, st.Size
	var d struct {
		SHA256 string `json:"sha256"`
	}
	json.Unmarshal(data, &d)
	if d.SHA256 != sum {
		return fmt.Errorf("the server stored sha256 %s, push read and sent %s", d.SHA256, sum)
	}
	return nil
}

// fileSum returns the SHA-256 of the first size bytes of f, the file name,
// read where they lie (f's offset stays where it is).
func fileSum(f *os.File, name string, size int64) (string, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(f, 0, size))
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if n < size {
		return "", fmt.Errorf("%s: %w while it was read: it shrank from %d bytes; nothing of it was stored", name, errChanged, size)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// pushTree sends a tree as tar streams of at most batchEntries entries and
// batchBytes bytes each, every one an atomic change on the server.
func (p *pusher) pushTree(ctx context.Context, item *pushItem, r *pushed) error {
	if len(item.entries) == 0 {
		// An archive makes the directories in it, never the one it is
		// unpacked into: an empty tree is declared as a directory.
		if err := callGuide(ctx, p.c, "guide_list_directory", map[string]any{"path": item.dest, "entries": []any{}}, &struct{}{}); err != nil {
			return err
		}
		r.Replies = append(r.Replies, json.RawMessage(`{}`))
		return nil
	}
	tries := 0 // the rate limit's waits for this batch
	for start := 0; start < len(item.entries); {
		end := p.batchEnd(item.entries, start)
		data, files, bytes, err := p.sendBatch(ctx, item, item.entries[start:end])
		if ref, ok := errors.AsType[*refusal](err); ok && ref.typ == "limit" && end-start > 1 {
			p.batchEntries = (end - start) / 2
			continue
		}
		again, err := p.afterRate(ctx, err, item.entries[start:end], &tries)
		if again {
			continue
		}
		if err != nil {
			if start > 0 {
				return fmt.Errorf("%w (the %d files sent before, in earlier changes, are stored)", err, r.Files)
			}
			return err
		}
		r.Replies = append(r.Replies, data)
		r.Files += files
		r.Bytes += bytes
		start, tries = end, 0
	}
	r.Directories = item.dirs
	return nil
}

// batchEnd is where the batch starting at entries[start] ends: at most
// batchEntries entries and batchBytes bytes, and at least one entry.
func (p *pusher) batchEnd(entries []pushEntry, start int) int {
	var bytes int64
	end := start
	for end < len(entries) && end-start < p.batchEntries {
		if end > start && bytes+entries[end].st.Size > p.batchBytes {
			break
		}
		if entries[end].st.Mode.IsRegular() {
			bytes += entries[end].st.Size
		}
		end++
	}
	return end
}

// sendBatch sends entries of item as one tar stream and returns the
// server's reply data and the files and bytes stored.
func (p *pusher) sendBatch(ctx context.Context, item *pushItem, entries []pushEntry) (json.RawMessage, int64, int64, error) {
	upload, err := p.begin(ctx, map[string]any{"path": item.dest, "format": "tar"})
	if err != nil {
		return nil, 0, 0, err
	}
	var files, sent int64
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := writeTar(pw, item, entries, p.prog, &files, &sent)
		pw.CloseWithError(err)
		done <- err
	}()
	wait := sync.OnceValue(func() error {
		pr.Close() // a reply before the end of the stream stops the writer
		if err := <-done; !errors.Is(err, io.ErrClosedPipe) {
			return err
		}
		return nil
	})
	data, err := p.put(ctx, upload, pr, -1, wait)
	wait()
	if err != nil {
		p.prog.bytes.Add(-sent)
		p.prog.files.Add(-files)
		return nil, 0, 0, err
	}
	return data, files, sent, nil
}

// writeTar writes entries of item as a tar stream to w: directories as
// directory entries (so empty ones are made too), files opened below the
// tree without following links and read steadily.
func writeTar(w io.Writer, item *pushItem, entries []pushEntry, prog *progress, files, sent *int64) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if e.st.Mode.IsDir() {
			h := &tar.Header{Name: e.rel + "/", Typeflag: tar.TypeDir, Mode: int64(e.st.Mode.Perm()), ModTime: e.st.MTime, Format: tar.FormatPAX}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		if err := addTarFile(tw, item, e, prog, sent); err != nil {
			return err
		}
		prog.files.Add(1)
		*files++
	}
	return tw.Close()
}

// addTarFile writes the file e of item as a tar entry.
func addTarFile(tw *tar.Writer, item *pushItem, e pushEntry, prog *progress, sent *int64) error {
	f, st, err := openEntry(item, e)
	if err != nil {
		return fmt.Errorf("%s: %w", item.local, err)
	}
	defer f.Close()
	h := &tar.Header{Name: e.rel, Typeflag: tar.TypeReg, Mode: int64(st.Mode.Perm()), Size: st.Size, ModTime: st.MTime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, newSteadyReader(f, item.local+"/"+e.rel, st, prog, sent))
	return err
}
