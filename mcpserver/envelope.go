package mcpserver

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// Envelope is the one reply shape of every tool. A tool result carries it
// twice: as structured content and, for clients that only show text, as the
// same JSON in a text content block. IsError is set when Success is false.
// Clients may decode replies into it. It is a plain value with no methods;
// share it between goroutines only for reading.
type Envelope struct {
	// Success reports whether the call did what it was asked. A successful
	// call may still carry Warnings.
	Success bool `json:"success"`
	// Data is the tool's result, a JSON object described in the tool's
	// description and output schema; an empty object on failure. It never
	// contains file content.
	Data any `json:"data"`
	// Message is one sentence for the agent about what happened.
	Message string `json:"message"`
	// Warnings lists things the agent may want to act on, such as files a
	// listing refused; never null.
	Warnings []string `json:"warnings"`
	// Stats carries counts and timings of the call, a JSON object.
	Stats any `json:"stats"`
	// Error is set exactly when Success is false.
	Error *Failure `json:"error,omitempty"`
}

// Failure is the error object of a failed call, a plain value like
// Envelope.
type Failure struct {
	// Type is the category of failure, one of the Error* constants.
	Type ErrorType `json:"type"`
	// Message says what was wrong. It names arguments and depot paths but
	// never host paths or internal details.
	Message string `json:"message"`
	// Instruction tells the agent what to do next.
	Instruction string `json:"instruction"`
	// RetryAfter is, for ErrorRateLimited, the seconds to wait before
	// repeating the call; 0 (omitted) otherwise.
	RetryAfter int `json:"retry_after,omitempty"`
}

// reply is what a tool handler returns on success; the wrapper adds the
// envelope around it.
type reply struct {
	data     any
	message  string
	warnings []string
	stats    map[string]any
}

// result encodes env once and returns it as structured content plus the
// identical JSON as text.
func result(env Envelope) (*mcp.CallToolResult, error) {
	if env.Warnings == nil {
		env.Warnings = []string{}
	}
	if env.Data == nil {
		env.Data = struct{}{}
	}
	if env.Stats == nil {
		env.Stats = struct{}{}
	}
	text, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(text))},
		StructuredContent: json.RawMessage(text),
		IsError:           !env.Success,
	}, nil
}
