package provider

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// providerFileHash is calculate_file_hash. SHA-256 is the depot's own
// content address, answered from the entry without reading the content;
// MD5 and SHA-1 stream the content, whatever its size.
func (s *tools) providerFileHash(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var a struct {
		FilePath  string        `json:"file_path" args:"path"`
		Algorithm hashAlgorithm `json:"algorithm"`
	}
	err := args.Fill(raw, c.OwnArgs(), &a)
	p := s.providerPath("file_path", a.FilePath)
	c.Path = p.depot
	if err != nil {
		return tool.Reply{}, err
	}
	if err := s.locate(ctx, c, &p, ""); err != nil {
		return tool.Reply{}, err
	}
	var h hash.Hash
	switch a.Algorithm {
	case "sha256":
		e, err := p.tree(c).Stat(ctx, p.depot)
		if err != nil {
			return tool.Reply{}, providerStoreError(err, "File", p)
		}
		switch {
		case e.IsDir():
			return tool.Reply{}, providerStoreError(store.ErrIsDir, "File", p)
		case !e.Present:
			return tool.Reply{}, providerStoreError(store.ErrNotPresent, "File", p)
		}
		c.Size, c.SHA256 = e.Size, e.SHA256
		return tool.Reply{Data: e.SHA256}, nil
	case "md5":
		h = md5.New()
	case "sha1":
		h = sha1.New()
	default:
		return tool.Reply{}, &providerError{providerFailed, fmt.Sprintf("Invalid hash algorithm: %s (use md5, sha1, sha256)", args.Quote(string(a.Algorithm))), args.ErrInvalid}
	}
	content, err := p.tree(c).Open(ctx, p.depot)
	if err != nil {
		return tool.Reply{}, providerStoreError(err, "File", p)
	}
	defer content.Close()
	c.Size, c.SHA256 = content.Size(), content.SHA256()
	if err := copyContent(ctx, h, content); err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "read", Path: p.depot, Err: err}
	}
	return tool.Reply{Data: hex.EncodeToString(h.Sum(nil))}, nil
}

// hashAlgorithm is calculate_file_hash's algorithm argument, lower-cased.
// It takes any string, beyond the schema's enum: the contract refuses an
// unknown algorithm with an error of its own, not as a malformed call.
type hashAlgorithm string

// ParseArg sets h from the argument s.
func (h *hashAlgorithm) ParseArg(s string) error {
	*h = hashAlgorithm(strings.ToLower(s))
	return nil
}

// copyContent writes the whole of content to w in 1 MiB pieces, stopping
// when ctx is done; content shorter than its size is io.ErrUnexpectedEOF.
func copyContent(ctx context.Context, w io.Writer, content store.Content) error {
	r := io.NewSectionReader(content, 0, content.Size())
	n, err := io.CopyBuffer(w, readFunc(func(p []byte) (int, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return r.Read(p)
	}), make([]byte, 1<<20))
	if err == nil && n < content.Size() {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readFunc is a function as an io.Reader.
type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }
