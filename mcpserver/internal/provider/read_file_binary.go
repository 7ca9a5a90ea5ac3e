package provider

import (
	"context"
	"io"

	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// providerRead returns the whole content of the file at p and its hash,
// refusing a file over maxSize (when not 0) or Options.MaxReadBytes before
// reading it. read_file_binary (readFile(false)) replies with these bytes
// in base64; read_file decodes them as text.
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
