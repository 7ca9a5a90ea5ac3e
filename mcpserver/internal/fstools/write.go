package fstools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// The write modes of the fs contract.
const (
	modeOverwrite = "overwrite"
	modeCreate    = "create"
	modeAppend    = "append"
	modeCreateNew = "create_new"
)

// appendAttempts bounds how often an append retries when another writer
// changed the file between its read and its write. Appends through this
// server queue on the path's lock and never race each other; what is left
// is a writer through another tool or another host, so an append waits a
// random backoff, growing with its attempts, before it reads again.
const appendAttempts = 32

// appendBackoff is the longest wait before the nth retry of an append.
func appendBackoff(n int) time.Duration { return time.Duration(min(n, 10)) * 2 * time.Millisecond }

// fsWriteReply is the reply of write.
type fsWriteReply struct {
	Success      bool       `json:"success"`
	Path         string     `json:"path"`
	BytesWritten int        `json:"bytes_written"`
	Metadata     fsMetadata `json:"metadata"`
	// Beyond the contract: what the write did, the content's hash, where
	// programs on the host read the file, and warnings (the mount did
	// not confirm the change in time).
	Status    string   `json:"status"`
	SHA256    string   `json:"sha256"`
	MountPath string   `json:"mount_path,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// fsWrite is write: one whole file, stored atomically.
func (s *tools) fsWrite(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	probs := c.OwnArgs()
	a := struct {
		Path     fsPath       `json:"path"`
		Content  args.Content `json:"content"`
		Mode     string       `json:"mode"`
		MakeDirs bool         `json:"make_dirs"`
		tool.Condition
	}{Path: s.path(), Content: args.Content{Max: s.opts.MaxContentBytes}}
	err := args.Fill(raw, probs, &a, func(o *args.Object) {
		if a.Path.p == depotpath.Root {
			o.Problems().Addf("path", "names the depot root, which is a directory; give a file path such as \"notes/todo.txt\"")
		}
		a.Condition.Valid(o)
		if a.Condition.Set() && a.Mode != modeOverwrite {
			o.Problems().Addf("mode", "is %s, and if_revision and if_absent guard only a whole write (mode overwrite): leave mode out, or the conditions", a.Mode)
		}
	})
	p, data, encoding, mode, makeDirs, cond := a.Path.p, a.Content.Data, a.Content.Encoding, a.Mode, a.MakeDirs, a.Condition
	c.Path = p
	if err != nil {
		return tool.Reply{}, err
	}
	c.Size, c.SHA256 = int64(len(data)), contentSum(data)
	c.Attrs = append(c.Attrs, slog.String("mode", mode))
	if err := s.fileSize(p, c.Size); err != nil {
		return tool.Reply{}, err
	}
	if !makeDirs {
		if err := s.parentExists(ctx, c, p); err != nil {
			return tool.Reply{}, err
		}
	}
	ctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	req := store.PutRequest{
		Path:     p,
		Data:     data,
		Encoding: encoding,
		Source:   "fs write",
		Writer:   c.Who().String(),
	}
	if e, err := c.Store().Stat(ctx, p); err == nil && !e.IsDir() {
		req.Mode = e.Mode // a write keeps the file's permissions
	}
	var res store.PutResult
	switch mode {
	case modeOverwrite:
		cond.Apply(&req)
		res, err = c.Store().Put(ctx, req)
		err = cond.Conflict(ctx, c.Store(), p, err)
	case modeCreateNew:
		req.IfAbsent = true
		res, err = c.Store().Put(ctx, req)
	case modeCreate:
		res, err = s.createOnce(ctx, c, req)
	case modeAppend:
		res, err = s.appendFile(ctx, c, req)
	}
	if _, ok := errors.AsType[*tool.ConflictError](err); ok {
		return tool.Reply{}, err
	}
	if err != nil {
		return tool.Reply{}, s.limitDetails(ctx, c, fsStoreError(err, p))
	}
	c.Status = res.Status.String()
	c.SHA256 = res.Entry.SHA256
	return tool.Reply{Data: fsWriteReply{
		Success:      true,
		Path:         relPath(p),
		BytesWritten: len(data),
		Metadata:     newFSMetadata(res.Entry),
		Status:       res.Status.String(),
		SHA256:       res.Entry.SHA256,
		MountPath:    s.opts.MountPath(p),
		Warnings:     append(s.opts.WaitApplied(ctx, c, res.Entry.Revision), probs.Warnings()...),
	}}, nil
}

// fileSize refuses content over the depot's file size limit at the edge,
// before the store sees it, as the guide tools do: invalid_parameters with
// the limit in the details, and nothing changes.
func (s *tools) fileSize(p string, size int64) error {
	if limit := s.opts.MaxFileBytes; limit > 0 && size > limit {
		return &fsError{
			code: fsInvalid, path: p, err: store.ErrLimit,
			msg:     fmt.Sprintf("The content of %d bytes exceeds the depot's file size limit of %d bytes, so nothing was stored: %s", size, limit, relPath(p)),
			details: map[string]any{"limit": limit, "size": size},
		}
	}
	return nil
}

// limitDetails adds the depot's limits to the details of a write the
// store refused as too large (an append over the file size limit, a store
// whose other content is pinned).
func (s *tools) limitDetails(ctx context.Context, c *tool.Call, err error) error {
	var fe *fsError
	if !errors.Is(err, store.ErrLimit) || !errors.As(err, &fe) {
		return err
	}
	st, serr := c.Store().Stats(ctx)
	if serr != nil {
		return err
	}
	fe.details = map[string]any{"limit": st.MaxFileBytes, "store_limit": st.MaxStoreBytes}
	return err
}

// parentExists fails with not_found unless the parent directory of p
// exists (without make_dirs, write creates no directory). A path under
// .snapshots is refused first: no parent made there would help, the
// snapshots are read-only.
func (s *tools) parentExists(ctx context.Context, c *tool.Call, p string) error {
	if depotpath.Within(p, store.SnapshotsDir) {
		return &fsError{code: fsPathInvalid, path: p, err: depotpath.ErrInvalid,
			msg: fmt.Sprintf("%s is under %s, where snapshots are shown read-only: write to a path outside it (guide_restore makes a file's version in a snapshot current again)", relPath(p), relPath(store.SnapshotsDir))}
	}
	dir, _ := depotpath.Split(p)
	e, err := c.Store().Stat(ctx, dir)
	switch {
	case errors.Is(err, store.ErrNotExist):
		return &fsError{code: fsNotFound, msg: fmt.Sprintf("The parent directory %s does not exist; set make_dirs to create it", relPath(dir)), path: dir, err: err}
	case err != nil:
		return fsStoreError(err, dir)
	case !e.IsDir():
		return fsStoreError(store.ErrConflict, dir)
	}
	return nil
}

// createOnce stores req unless the path has an entry; a file that already
// has exactly these bytes counts as created before (a retry), so the mode
// is safe to repeat.
func (s *tools) createOnce(ctx context.Context, c *tool.Call, req store.PutRequest) (store.PutResult, error) {
	req.IfAbsent = true
	res, err := c.Store().Put(ctx, req)
	if !errors.Is(err, store.ErrExist) {
		return res, err
	}
	e, serr := c.Store().Stat(ctx, req.Path)
	if serr == nil && !e.IsDir() && e.Present && e.SHA256 == contentSum(req.Data) {
		return store.PutResult{Status: store.StatusUnchanged, Entry: e}, nil
	}
	return store.PutResult{}, err
}

// appendFile adds req.Data at the end of the file at req.Path (creating it
// when absent): it reads the current content and writes the whole file
// back, conditional on the revision it read, and starts over when another
// writer came in between, so concurrent appends never lose each other. A
// file that would grow beyond Options.MaxReadBytes is refused, since each
// append reads and rewrites it whole.
func (s *tools) appendFile(ctx context.Context, c *tool.Call, req store.PutRequest) (store.PutResult, error) {
	defer s.appends.lock(req.Path)()
	for attempt := range appendAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return store.PutResult{}, ctx.Err()
			case <-time.After(rand.N(appendBackoff(attempt))):
			}
		}
		e, err := c.Store().Stat(ctx, req.Path)
		if errors.Is(err, store.ErrNotExist) {
			create := req
			create.IfAbsent = true
			res, err := c.Store().Put(ctx, create)
			if errors.Is(err, store.ErrExist) {
				continue
			}
			return res, err
		}
		if err != nil {
			return store.PutResult{}, err
		}
		if e.IsDir() {
			return store.PutResult{}, store.ErrIsDir
		}
		if total := e.Size + int64(len(req.Data)); total > s.opts.MaxReadBytes {
			return store.PutResult{}, args.LimitError("appending %d bytes to a file of %d would make it %d bytes, over the limit of %d for appends (each append rewrites the whole file); write it whole, or push it with guide_read_file in chunks", len(req.Data), e.Size, total, s.opts.MaxReadBytes)
		}
		old, err := s.readAll(ctx, c, req.Path, e.Revision)
		if errors.Is(err, store.ErrRevision) {
			continue
		}
		if err != nil {
			return store.PutResult{}, err
		}
		next := req
		next.Data = append(old, req.Data...)
		next.IfRevision = e.Revision
		next.Mode = e.Mode
		res, err := c.Store().Put(ctx, next)
		if errors.Is(err, store.ErrRevision) {
			continue
		}
		return res, err
	}
	return store.PutResult{}, fmt.Errorf("%w: the file kept changing during %d attempts to append", store.ErrRevision, appendAttempts)
}

// readAll returns the whole content of the file at p, failing with
// store.ErrRevision when it is no longer at revision rev.
func (s *tools) readAll(ctx context.Context, c *tool.Call, p string, rev uint64) ([]byte, error) {
	content, err := c.Store().Open(ctx, p)
	if err != nil {
		return nil, err
	}
	defer content.Close()
	e, err := c.Store().Stat(ctx, p)
	if err != nil {
		return nil, err
	}
	if e.Revision != rev || e.SHA256 != content.SHA256() {
		return nil, store.ErrRevision
	}
	data := make([]byte, content.Size())
	if _, err := io.ReadFull(io.NewSectionReader(content, 0, content.Size()), data); err != nil {
		return nil, err
	}
	return data, nil
}

// contentSum is the lowercase hex SHA-256 of b.
func contentSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
