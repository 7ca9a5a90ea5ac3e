package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// readArgs are the arguments of read_file and read_file_binary.
type readArgs struct {
	path     providerPath
	encoding string // read_file only
	maxSize  int64  // 0: the server's limit only
	snapshot string // the snapshot argument, "" when absent
}

// decodeReadArgs reads the arguments of read_file (text true) or
// read_file_binary.
func (s *tools) decodeReadArgs(c *tool.Call, raw json.RawMessage, text bool) (readArgs, error) {
	var a readArgs
	err := args.Parse(raw, c.OwnArgs(), func(o *args.Object) {
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
		a.maxSize = o.Count("max_size", 0)
		a.snapshot = tool.SnapshotName(o)
	})
	return a, err
}

// readFile is read_file (text true: a file's content decoded as text) or
// read_file_binary (its content in base64).
func (s *tools) readFile(text bool) tool.Func {
	return func(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
		a, err := s.decodeReadArgs(c, raw, text)
		c.Path = a.path.depot
		if err != nil {
			return tool.Reply{}, err
		}
		if err := s.locate(ctx, c, &a.path, a.snapshot); err != nil {
			return tool.Reply{}, err
		}
		if reply, linked, err := s.providerLink(ctx, c, a.path); linked || err != nil {
			return reply, err
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
}
