package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// toolReply is a tool's reply as a contract client sees it: the text of
// its content, whether it is an error, and its structured content if any.
type toolReply struct {
	text       string
	isError    bool
	structured json.RawMessage
}

// callTool calls a tool with plain MCP: no depotfs envelope is assumed.
func callTool(c *client.Client, tool string, args map[string]any) (toolReply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return toolReply{}, fmt.Errorf("%s: %w", tool, err)
	}
	var r toolReply
	for _, content := range res.Content {
		if tc, ok := content.(mcp.TextContent); ok {
			r.text += tc.Text
		}
	}
	r.isError = res.IsError
	if res.StructuredContent != nil {
		if r.structured, err = json.Marshal(res.StructuredContent); err != nil {
			return toolReply{}, err
		}
	}
	return r, nil
}

// providerClient uses only the file-provider contract (000): its seven
// tool names, its argument names, its replies (the value itself) and its
// error object {"error", "error_type"}. It knows nothing of depotfs.
type providerClient struct{ c *client.Client }

// providerError is the contract's error object.
type providerError struct {
	Message string `json:"error"`
	Type    string `json:"error_type"`
}

func (e *providerError) Error() string { return e.Type + ": " + e.Message }

// call returns the text of a reply, or the contract's error.
func (p providerClient) call(tool string, args map[string]any) (string, error) {
	r, err := callTool(p.c, tool, args)
	if err != nil {
		return "", err
	}
	if r.isError {
		var pe providerError
		if err := json.Unmarshal([]byte(r.text), &pe); err != nil || pe.Type == "" {
			return "", fmt.Errorf("%s: error reply %q is not the contract's error object", tool, r.text)
		}
		return "", &pe
	}
	return r.text, nil
}

// callJSON decodes the reply's text as JSON into v.
func (p providerClient) callJSON(tool string, args map[string]any, v any) error {
	text, err := p.call(tool, args)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return fmt.Errorf("%s: reply %q: %w", tool, text, err)
	}
	return nil
}

func (p providerClient) ReadFile(path, encoding string, maxSize int) (string, error) {
	args := map[string]any{"file_path": path, "encoding": encoding}
	if maxSize > 0 {
		args["max_size"] = fmt.Sprint(maxSize) // as the contract's reference client sends it
	}
	return p.call("read_file", args)
}

func (p providerClient) ReadFileBinary(path string, maxSize int) (string, error) {
	args := map[string]any{"file_path": path}
	if maxSize > 0 {
		args["max_size"] = maxSize
	}
	return p.call("read_file_binary", args)
}

func (p providerClient) ListDirectory(dir, pattern string, recursive bool, maxFiles int) ([]string, error) {
	args := map[string]any{"directory_path": dir, "recursive": recursive}
	if pattern != "" {
		args["pattern"] = pattern
	}
	if maxFiles > 0 {
		args["max_files"] = maxFiles
	}
	var out []string
	return out, p.callJSON("list_directory", args, &out)
}

func (p providerClient) FileExists(path string) (bool, error) {
	var out bool
	return out, p.callJSON("file_exists", map[string]any{"path": path}, &out)
}

// fileStats is get_file_stats' reply.
type fileStats struct {
	Path         string `json:"path"`
	FileType     string `json:"file_type"`
	Size         int64  `json:"size"`
	ModifiedTime string `json:"modified_time"`
	IsReadable   bool   `json:"is_readable"`
	IsDirectory  bool   `json:"is_directory"`
}

func (p providerClient) GetFileStats(path string) (fileStats, error) {
	var out fileStats
	return out, p.callJSON("get_file_stats", map[string]any{"path": path}, &out)
}

func (p providerClient) CalculateFileHash(path, algorithm string) (string, error) {
	return p.call("calculate_file_hash", map[string]any{"file_path": path, "algorithm": algorithm})
}

func (p providerClient) FindFiles(dir string, patterns []string, recursive bool, maxFiles int) ([]string, error) {
	args := map[string]any{"directory_path": dir, "patterns": patterns, "recursive": recursive}
	if maxFiles > 0 {
		args["max_files"] = maxFiles
	}
	var out []string
	return out, p.callJSON("find_files", args, &out)
}

// fsClient uses only the filesystem contract (002): its nine tool names,
// its argument names, its reply objects and its error object
// {"error": {"code", "message", "details"}}. Paths are relative to the
// server root.
type fsClient struct{ c *client.Client }

// fsError is the contract's error object.
type fsError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details struct {
		Path      string `json:"path"`
		Operation string `json:"operation"`
		Limit     int64  `json:"limit"`
		Size      int64  `json:"size"`
	} `json:"details"`
}

func (e *fsError) Error() string { return e.Code + ": " + e.Message }

// call decodes a reply object into out (a pointer, or nil), or returns the
// contract's error.
func (f fsClient) call(tool string, args map[string]any, out any) error {
	r, err := callTool(f.c, tool, args)
	if err != nil {
		return err
	}
	if r.isError {
		var e struct {
			Error *fsError `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.text), &e); err != nil || e.Error == nil || e.Error.Code == "" {
			return fmt.Errorf("%s: error reply %q is not the contract's error object", tool, r.text)
		}
		return e.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal([]byte(r.text), out); err != nil {
		return fmt.Errorf("%s: reply %q: %w", tool, r.text, err)
	}
	return nil
}
