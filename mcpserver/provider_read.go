package mcpserver

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/depotfs/depotfs/store"
)

// readArgs are the arguments of read_file and read_file_binary.
type readArgs struct {
	path     providerPath
	encoding string // read_file only
	maxSize  int64  // 0: the server's limit only
}

// decodeReadArgs reads the arguments of read_file (text true) or
// read_file_binary.
func (s *Server) decodeReadArgs(raw json.RawMessage, text bool) (readArgs, error) {
	var probs problems
	var a readArgs
	if o := decodeObject(raw, "arguments", "", &probs); o != nil {
		a.path = s.providerPathArg(o, "file_path")
		if text {
			a.encoding = "utf-8"
			if enc, ok := o.str("encoding", false); ok {
				if _, known := lookupEncoding(enc); known {
					a.encoding = enc
				} else {
					o.probs.addf("encoding", "unknown text encoding %s; use one of %s", quote(enc), strings.Join(encodingNames(), ", "))
				}
			}
		}
		a.maxSize = providerSize(o, "max_size")
		o.finish()
	}
	return a, probs.err()
}

// providerReadFile is read_file: a file's content decoded as text.
func (s *Server) providerReadFile(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	a, err := s.decodeReadArgs(raw, true)
	c.path = a.path.depot
	if err != nil {
		return reply{}, err
	}
	data, sum, err := s.providerRead(ctx, c, a.path, a.maxSize)
	if err != nil {
		return reply{}, err
	}
	c.size, c.sha256 = int64(len(data)), sum
	text, err := decodeText(data, a.encoding)
	if err != nil {
		return reply{}, &providerError{providerFailed, fmt.Sprintf("Encoding error: %v", err), errArgs}
	}
	return reply{data: text}, nil
}

// providerReadFileBinary is read_file_binary: a file's content in base64.
func (s *Server) providerReadFileBinary(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	a, err := s.decodeReadArgs(raw, false)
	c.path = a.path.depot
	if err != nil {
		return reply{}, err
	}
	data, sum, err := s.providerRead(ctx, c, a.path, a.maxSize)
	if err != nil {
		return reply{}, err
	}
	c.size, c.sha256 = int64(len(data)), sum
	return reply{data: base64.StdEncoding.EncodeToString(data)}, nil
}

// providerRead returns the whole content of the file at p and its hash,
// refusing a file over maxSize (when not 0) or Options.MaxReadBytes before
// reading it.
func (s *Server) providerRead(ctx context.Context, c *call, p providerPath, maxSize int64) ([]byte, string, error) {
	content, err := c.store.Open(ctx, p.depot)
	if err != nil {
		return nil, "", providerStoreError(err, "File", p)
	}
	defer content.Close()
	size := content.Size()
	if maxSize > 0 && size > maxSize {
		return nil, "", providerSizeError(size, maxSize, "")
	}
	if size > s.opts.MaxReadBytes {
		return nil, "", providerSizeError(size, s.opts.MaxReadBytes, "the server's ")
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(content, 0, size), data); err != nil {
		return nil, "", &storeError{op: "read", path: p.depot, err: err}
	}
	return data, content.SHA256(), nil
}

// The hash algorithms of calculate_file_hash.
var hashAlgorithms = []string{"md5", "sha1", "sha256"}

// providerFileHash is calculate_file_hash. SHA-256 is the depot's own
// content address, answered from the entry without reading the content;
// MD5 and SHA-1 stream the content, whatever its size.
func (s *Server) providerFileHash(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	var probs problems
	var p providerPath
	algorithm := "md5"
	if o := decodeObject(raw, "arguments", "", &probs); o != nil {
		p = s.providerPathArg(o, "file_path")
		if o.has("algorithm") {
			if name, ok := o.str("algorithm", false); ok {
				algorithm = strings.ToLower(name)
			}
		}
		o.finish()
	}
	c.path = p.depot
	if err := probs.err(); err != nil {
		return reply{}, err
	}
	var h hash.Hash
	switch algorithm {
	case "sha256":
		e, err := c.store.Stat(ctx, p.depot)
		if err != nil {
			return reply{}, providerStoreError(err, "File", p)
		}
		switch {
		case e.IsDir():
			return reply{}, providerNotFile(p)
		case !e.Present:
			return reply{}, providerNotPresent(p)
		}
		c.size, c.sha256 = e.Size, e.SHA256
		return reply{data: e.SHA256}, nil
	case "md5":
		h = md5.New()
	case "sha1":
		h = sha1.New()
	default:
		return reply{}, &providerError{providerFailed, fmt.Sprintf("Invalid hash algorithm: %s (use %s)", quote(algorithm), strings.Join(hashAlgorithms, ", ")), errArgs}
	}
	content, err := c.store.Open(ctx, p.depot)
	if err != nil {
		return reply{}, providerStoreError(err, "File", p)
	}
	defer content.Close()
	c.size, c.sha256 = content.Size(), content.SHA256()
	if err := copyContent(ctx, h, content); err != nil {
		return reply{}, &storeError{op: "read", path: p.depot, err: err}
	}
	return reply{data: hex.EncodeToString(h.Sum(nil))}, nil
}

// copyContent writes the whole of content to w in 1 MiB pieces, stopping
// when ctx is done.
func copyContent(ctx context.Context, w io.Writer, content store.Content) error {
	buf := make([]byte, 1<<20)
	for off := int64(0); off < content.Size(); {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := content.ReadAt(buf[:min(int64(len(buf)), content.Size()-off)], off)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if err != nil && err != io.EOF {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
	}
	return nil
}
