package provider

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// providerRead returns the whole content of the file at p and its hash,
// refusing a file over maxSize (when not 0) or Options.MaxReadBytes before
// reading it. read_file_binary (readFile(false)) replies with these bytes
// in base64; read_file decodes them as text.
func (s *tools) providerRead(ctx context.Context, c *tool.Call, p providerPath, maxSize int64) ([]byte, string, error) {
	content, err := p.tree(c).Open(ctx, p.depot)
	if errors.Is(err, store.ErrNotExist) && p.place.Snap == nil {
		if near := c.Store().Nearby(ctx, p.depot); near != "" {
			return nil, "", &providerError{providerNotFound, fmt.Sprintf("File not found: %s; paths start at the depot's root: did you mean %s?", p.show(p.depot), args.Quote(p.show(near))), err}
		}
	}
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

// providerLink answers a read of a file over Settings.LinkMinBytes, over
// HTTP, with its resource link: the text says where the content is, the
// link block carries it (tool.Call.FileLink). linked is false for any
// other file, which is read as before.
func (s *tools) providerLink(ctx context.Context, c *tool.Call, p providerPath) (_ tool.Reply, linked bool, _ error) {
	e, err := p.tree(c).Stat(ctx, p.depot)
	if err != nil || !e.Present {
		return tool.Reply{}, false, nil // the read reports it
	}
	link, ok := c.FileLink(e)
	if !ok {
		return tool.Reply{}, false, nil
	}
	c.Size, c.SHA256 = e.Size, e.SHA256
	text := fmt.Sprintf("%s is %d bytes (sha256 %s), too large to send inline: its content is at %s (the resource_link of this reply). GET it with the same credentials as this session; Range requests work and the ETag is the sha256. The link reads this version (revision %d) while the depot keeps it.",
		p.show(p.depot), e.Size, e.SHA256, link.URI, e.Revision)
	return tool.Reply{Data: text, Links: []mcp.ResourceLink{link}}, true, nil
}
