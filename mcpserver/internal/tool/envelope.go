package tool

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/depotfs/depotfs/store"
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
	// RetryAfter is, for ErrorRateLimited and for a system error the
	// call may outlive (the store's cluster has no quorum), the seconds to
	// wait before repeating the call; 0 (omitted) otherwise.
	RetryAfter int `json:"retry_after,omitempty"`
	// Current is, for a conditional write that lost (ErrorConflict from
	// if_revision or if_absent), the entry as it is now; nil otherwise.
	Current *Current `json:"current,omitempty"`
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

// EnvelopeShape wraps every outcome in the Envelope: the reply shape of
// the guide tools.
type EnvelopeShape struct{}

var _ Shape = EnvelopeShape{}

// Success renders out in the envelope, with the call's stats.
func (EnvelopeShape) Success(c *Call, out Reply) (*mcp.CallToolResult, error) {
	res, err := result(Envelope{Success: true, Data: out.Data, Message: out.Message, Warnings: out.Warnings, Stats: c.envelopeStats(out.Stats)})
	return WithLinks(res, out), err
}

// Failure renders err as the envelope's error object (Classify).
func (EnvelopeShape) Failure(c *Call, err error) *mcp.CallToolResult {
	f := Classify(err)
	msg := fmt.Sprintf("The call failed with a %s error and changed nothing; error.message says why and error.instruction what to do.", f.Type)
	_, unaudited := errors.AsType[*auditError](err)
	switch {
	case errors.Is(err, store.ErrOutcomeUnknown):
		msg = "The call's outcome is unknown: the change was sent, but the depot's cluster did not confirm it in time, so it may or may not be applied; error.instruction says how to find out."
	case unaudited && c.committed:
		msg = "The change was stored, but depotfs could not write its audit record, so it refuses further calls until its audit log works again; error.instruction says what to do."
	case unaudited:
		msg = "The call was refused because depotfs cannot write its audit log; error.instruction says what to do."
	}
	res, encErr := result(Envelope{Error: &f, Message: msg, Stats: c.envelopeStats(nil)})
	if encErr != nil {
		// A Failure is three strings and a map of numbers and strings,
		// which always encode; this is only a fallback.
		return mcp.NewToolResultError(f.Message)
	}
	return res
}

// envelopeStats adds to a reply's stats (nil: none) what every envelope
// carries: the call's duration, its request id (the one in its audit
// record and log line) and the caller's own counts.
func (c *Call) envelopeStats(stats map[string]any) map[string]any {
	if stats == nil {
		stats = map[string]any{}
	}
	stats["duration_ms"] = c.rt.env.Now().Sub(c.start).Milliseconds()
	stats["request_id"] = c.reqID
	stats["caller"] = map[string]any{
		"identity":     c.counts.Identity,
		"calls":        c.counts.Calls,
		"denied":       c.counts.Denied,
		"rate_limited": c.counts.RateLimited,
		"bytes":        c.counts.Bytes,
	}
	return stats
}
