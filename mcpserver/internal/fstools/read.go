package fstools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/search"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// defaultFSReadBytes is the max_size of an fs read that does not give one,
// as the contract sets it: 1 MiB.
const defaultFSReadBytes = 1 << 20

// defaultReadBytes is read's max_size when the call gives none: at most
// the server's read limit.
func (s *tools) defaultReadBytes() int64 { return min(defaultFSReadBytes, s.opts.MaxReadBytes) }

// fsReadReply is the reply of read.
type fsReadReply struct {
	Content   string     `json:"content"`
	Encoding  string     `json:"encoding"` // "utf8" or "base64"
	Size      int        `json:"size"`     // bytes of content returned, before base64
	Truncated bool       `json:"truncated"`
	LineCount int        `json:"line_count"` // lines in the whole file
	Metadata  fsMetadata `json:"metadata"`
	// Link is the URL of the file's resource link, for a file over
	// Settings.LinkMinBytes: a whole-file read then returns no content.
	Link string `json:"link,omitempty"`
}

// fsRead is read: a file's content, or the lines start_line..end_line of
// it, at most max_size bytes (truncated says when there was more), as
// UTF-8 text, or base64 when asked or when the content is not text.
func (s *tools) fsRead(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	a := struct {
		Path      fsPath            `json:"path"`
		Encoding  readEncoding      `json:"encoding"`
		StartLine int64             `json:"start_line"` // lines, 0-based; -1 when not given
		EndLine   int64             `json:"end_line"`   // inclusive; -1 when not given
		MaxSize   int64             `json:"max_size"`
		Revision  uint64            `json:"revision"` // read the file as it was at this revision; 0: now
		Snapshot  tool.SnapshotName `json:"snapshot"`
	}{Path: s.path(), StartLine: -1, EndLine: -1}
	var part bool // the call asks for lines or a size: no link instead
	err := args.Fill(raw, c.OwnArgs(), &a, func(o *args.Object) {
		part = o.Has("start_line") || o.Has("end_line") || o.Has("max_size")
		if a.StartLine >= 0 && a.EndLine >= 0 && a.EndLine < a.StartLine {
			o.Problems().Addf("end_line", "%d is before start_line %d (end_line is inclusive)", a.EndLine, a.StartLine)
		}
	})
	p, encoding, start, end, maxSize, revision := a.Path.p, string(a.Encoding), a.StartLine, a.EndLine, a.MaxSize, a.Revision
	c.Path = p
	if err != nil {
		return tool.Reply{}, err
	}
	pl, err := c.Store().Locate(ctx, "path", p, string(a.Snapshot))
	if err != nil {
		return tool.Reply{}, err
	}
	if pl.Snap != nil && revision != 0 {
		return tool.Reply{}, args.Problem("revision", "give either revision or a snapshot (its revision is %d), not both", pl.Revision())
	}
	if err := checkRevision(ctx, c, p, revision); err != nil {
		return tool.Reply{}, err
	}
	p, c.Path = pl.Path, pl.Path
	if pl.Snap != nil {
		revision = pl.Revision()
	}
	e, content, err := openVersion(ctx, c, p, revision)
	if err != nil {
		return tool.Reply{}, s.readError(ctx, c, err, pl, revision)
	}
	defer content.Close()
	c.Size, c.SHA256 = content.Size(), content.SHA256()
	e.Size = content.Size()
	link, linked := c.FileLink(e)
	if linked && !part {
		maxSize = 0 // the content travels by the link; the lines are still counted
	}
	sel, err := selectLines(ctx, content, start, end, maxSize)
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "read", Path: p, Err: err}
	}
	out := fsReadReply{Truncated: sel.truncated, LineCount: sel.lines, Metadata: newFSMetadata(e)}
	out.Metadata.Path = relPath(pl.Show(e.Path))
	reply := tool.Reply{Data: &out}
	if linked {
		out.Link, reply.Links = link.URI, []mcp.ResourceLink{link}
	}
	data := sel.data
	if encoding == args.EncodingUTF8 {
		if sel.truncated {
			data = trimPartialRune(data)
		}
		if bytes.IndexByte(data[:min(len(data), search.BinaryProbe)], 0) < 0 && utf8.Valid(data) {
			out.Content, out.Encoding, out.Size = string(data), "utf8", len(data)
			return reply, nil
		}
		data = sel.data // binary: base64 of the bytes as selected
	}
	out.Content, out.Encoding, out.Size = base64.StdEncoding.EncodeToString(data), "base64", len(data)
	return reply, nil
}

// readEncoding is read's encoding argument: args.EncodingUTF8,
// args.EncodingBase64 or "binary", in any case.
type readEncoding string

// DecodeArg reads field into e (see args.Object.Encoding).
func (e *readEncoding) DecodeArg(o *args.Object, field string, _ bool) {
	enc, _ := o.Encoding(field, "binary")
	*e = readEncoding(enc)
}

// checkRevision refuses a revision the depot has not reached: the tree
// "as of" a future revision would be today's, which the agent did not ask
// for and which may change before that revision comes.
func checkRevision(ctx context.Context, c *tool.Call, p string, rev uint64) error {
	if rev == 0 {
		return nil
	}
	cur, err := c.Store().Revision(ctx)
	if err != nil {
		return &tool.StoreError{Op: "revision", Path: p, Err: err}
	}
	if rev > cur {
		return &fsError{code: fsInvalid, path: p, err: args.ErrInvalid,
			msg: fmt.Sprintf("Revision %d is beyond the depot's current revision %d: read without revision for the file as it is now, or with a revision info or guide_file_history gave you", rev, cur)}
	}
	return nil
}

// readError words a failed read of place pl at revision rev (0: now): a
// path missing from a snapshot names the snapshot, a revision
// beyond the depot's names the current one, a version no longer kept
// names the kept ones, and a missing path names the one it probably meant.
func (s *tools) readError(ctx context.Context, c *tool.Call, err error, pl tool.Place, rev uint64) error {
	p := pl.Path
	if !errors.Is(err, store.ErrNotExist) {
		return fsStoreError(err, p)
	}
	if pl.Snap != nil {
		return &fsError{code: fsNotFound, path: p, err: err,
			msg: fmt.Sprintf("%s did not exist in snapshot %s (the tree below %s as of revision %d): list the snapshot's directory to see what it holds", relPath(pl.Show(p)), c.Store().SnapshotName(pl.Snap.Name), relPath(pl.Snap.Prefix), pl.Snap.Revision)}
	}
	if rev != 0 {
		if kept, kerr := c.Store().Kept(ctx, p); kerr == nil && len(kept) > 0 {
			return &fsError{code: fsNotFound, path: p, err: err,
				msg: fmt.Sprintf("The version of %s live at revision %d is not kept, or the file did not exist yet (kept: %v): read with one of the kept revisions, or without revision for the file as it is now", relPath(p), rev, kept)}
		}
	}
	if near := c.Store().Nearby(ctx, p); near != "" {
		return &fsError{code: fsNotFound, path: p, err: err,
			msg: fmt.Sprintf("The specified path does not exist: %s; paths are relative to the depot's root: did you mean %s?", relPath(p), args.Quote(relPath(near)))}
	}
	return fsStoreError(err, p)
}

// openVersion returns the entry and content of the file at p, as it is now or,
// when rev is not 0, as it was at revision rev (a kept version).
func openVersion(ctx context.Context, c *tool.Call, p string, rev uint64) (store.Entry, store.Content, error) {
	stat, get := c.Store().Stat, c.Store().Open
	if rev != 0 {
		stat = func(ctx context.Context, p string) (store.Entry, error) { return c.Store().StatAt(ctx, p, rev) }
		get = func(ctx context.Context, p string) (store.Content, error) { return c.Store().OpenAt(ctx, p, rev) }
	}
	e, err := stat(ctx, p)
	if err != nil {
		return store.Entry{}, nil, err
	}
	content, err := get(ctx, p)
	return e, content, err
}

// selection is the part of a file a read returns.
type selection struct {
	data      []byte // at most maxSize bytes
	truncated bool   // the selected lines held more than maxSize bytes
	lines     int    // lines in the whole file
}

// selectLines streams content once: it keeps the bytes of lines
// start..end (all lines when start and end are -1), at most maxSize of
// them, and counts the file's lines (a last line without a newline
// counts). Memory is bounded by maxSize, whatever the file's size.
func selectLines(ctx context.Context, content store.Content, start, end, maxSize int64) (selection, error) {
	var sel selection
	start = max(start, 0)
	size := content.Size()
	buf := make([]byte, min(size, 1<<20))
	var line int64 // line number of the byte at off
	var last byte  // the byte before off
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return selection{}, err
		}
		n, err := content.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if n == 0 && err != nil {
			return selection{}, fmt.Errorf("at byte %d: %w", off, err)
		}
		block := buf[:n]
		last = block[len(block)-1]
		if start == 0 && end < 0 || end >= 0 && line > end {
			// Line boundaries no longer matter: the whole file is
			// selected, or the selection is behind.
			if end < 0 {
				sel.take(block, maxSize)
			}
			line += int64(bytes.Count(block, []byte{'\n'}))
			block = nil
		}
		for len(block) > 0 {
			piece := block
			if nl := bytes.IndexByte(block, '\n'); nl >= 0 {
				piece = block[:nl+1]
			}
			if line >= start && (end < 0 || line <= end) {
				sel.take(piece, maxSize)
			}
			if piece[len(piece)-1] == '\n' {
				line++
			}
			block = block[len(piece):]
		}
		off += int64(n)
	}
	sel.lines = int(line)
	if size > 0 && last != '\n' {
		sel.lines++
	}
	return sel, nil
}

// take appends what fits of b under maxSize bytes, and notes the rest.
func (sel *selection) take(b []byte, maxSize int64) {
	room := maxSize - int64(len(sel.data))
	if int64(len(b)) > room {
		sel.truncated = true
		b = b[:max(room, 0)]
	}
	sel.data = append(sel.data, b...)
}

// trimPartialRune drops an incomplete UTF-8 sequence a byte limit cut at
// the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}
