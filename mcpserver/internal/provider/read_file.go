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

// readArgs are the arguments of read_file_binary, and with textArgs of
// read_file.
type readArgs struct {
	FilePath string            `json:"file_path" args:"path"`
	MaxSize  int64             `json:"max_size"` // 0: the server's limit only
	Snapshot tool.SnapshotName `json:"snapshot"`
}

// textArgs are the arguments of read_file.
type textArgs struct {
	readArgs
	Encoding textEncoding `json:"encoding"`
}

// textEncoding is read_file's encoding argument: a text encoding Go knows.
type textEncoding string

// ParseArg sets e from the argument s, refusing an encoding Go does not
// know.
func (e *textEncoding) ParseArg(s string) error {
	if _, known := args.LookupEncoding(s); !known {
		return fmt.Errorf("%w: unknown text encoding %s; use one of %s", args.ErrInvalid, args.Quote(s), strings.Join(args.EncodingNames(), ", "))
	}
	*e = textEncoding(s)
	return nil
}

// readFile is read_file (text true: a file's content decoded as text) or
// read_file_binary (its content in base64).
func (s *tools) readFile(text bool) tool.Func {
	return func(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
		var a textArgs
		var err error
		if text {
			err = args.Fill(raw, c.OwnArgs(), &a)
		} else {
			err = args.Fill(raw, c.OwnArgs(), &a.readArgs)
		}
		p := s.providerPath("file_path", a.FilePath)
		c.Path = p.depot
		if err != nil {
			return tool.Reply{}, err
		}
		if err := s.locate(ctx, c, &p, string(a.Snapshot)); err != nil {
			return tool.Reply{}, err
		}
		if reply, linked, err := s.providerLink(ctx, c, p); linked || err != nil {
			return reply, err
		}
		data, sum, err := s.providerRead(ctx, c, p, a.MaxSize)
		if err != nil {
			return tool.Reply{}, err
		}
		c.Size, c.SHA256 = int64(len(data)), sum
		if !text {
			return tool.Reply{Data: base64.StdEncoding.EncodeToString(data)}, nil
		}
		decoded, err := args.DecodeText(data, string(a.Encoding))
		if err != nil {
			return tool.Reply{}, &providerError{providerFailed, fmt.Sprintf("Encoding error: %v", err), args.ErrInvalid}
		}
		return tool.Reply{Data: decoded}, nil
	}
}
