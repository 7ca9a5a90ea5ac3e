package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// readArgs are the arguments of read_file and read_file_binary.
type readArgs struct {
	path     providerPath
	encoding string // read_file only
	maxSize  int64  // 0: the server's limit only
}

// decodeReadArgs reads the arguments of read_file (text true) or
// read_file_binary.
func (s *tools) decodeReadArgs(raw json.RawMessage, text bool) (readArgs, error) {
	var probs args.Problems
	var a readArgs
	if o := args.Decode(raw, "arguments", "", &probs); o != nil {
		a.path = s.providerPathArg(o, "file_path")
		if text {
			a.encoding = "utf-8"
			if enc, ok := o.Str("encoding", false); ok {
				if _, known := args.LookupEncoding(enc); known {
					a.encoding = enc
				} else {
					o.Problems().Addf("encoding", "unknown text encoding %s; use one of %s", args.Quote(enc), strings.Join(args.EncodingNames(), ", "))
				}
			}
		}
		a.maxSize = providerSize(o, "max_size")
		o.Finish()
	}
	return a, probs.Err()
}

// providerReadFile is read_file: a file's content decoded as text.
func (s *tools) providerReadFile(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	return s.readFile(ctx, c, raw, true)
}

// readFile reads a whole file for read_file (text true) or
// read_file_binary.
func (s *tools) readFile(ctx context.Context, c *tool.Call, raw json.RawMessage, text bool) (tool.Reply, error) {
	a, err := s.decodeReadArgs(raw, text)
	c.Path = a.path.depot
	if err != nil {
		return tool.Reply{}, err
	}
	data, sum, err := s.providerRead(ctx, c, a.path, a.maxSize)
	if err != nil {
		return tool.Reply{}, err
	}
	c.Size, c.SHA256 = int64(len(data)), sum
	if !text {
		return tool.Reply{Data: base64.StdEncoding.EncodeToString(data)}, nil
	}
	decoded, err := args.DecodeText(data, a.encoding)
	if err != nil {
		return tool.Reply{}, &providerError{providerFailed, fmt.Sprintf("Encoding error: %v", err), args.ErrInvalid}
	}
	return tool.Reply{Data: decoded}, nil
}

// providerRead returns the whole content of the file at p and its hash,
// refusing a file over maxSize (when not 0) or Options.MaxReadBytes before
// reading it.
func (s *tools) providerRead(ctx context.Context, c *tool.Call, p providerPath, maxSize int64) ([]byte, string, error) {
	content, err := c.Store().Open(ctx, p.depot)
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
		return nil, "", &tool.StoreError{Op: "read", Path: p.depot, Err: err}
	}
	return data, content.SHA256(), nil
}

// The hash algorithms of calculate_file_hash.
var hashAlgorithms = []string{"md5", "sha1", "sha256"}
