package mcpserver

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/depotfs/depotfs/mcpserver/internal/markdown"
	"github.com/depotfs/depotfs/mcpserver/internal/resources"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// The documented examples of each tool are <tool>.json, a JSON array of
// Example, in the doc/examples directory of the tool's package. They are
// embedded in the binary; the package's tests run every example against a
// real store and fail when a recorded reply no longer matches (go test
// -run TestTools -update rewrites them).

// allTools returns every tool of every profile, by name. The map is built
// once, from a server built for it (which costs about a server's start),
// and shared: callers only read it.
var allTools = sync.OnceValue(func() map[string]tool.Tool {
	s := newServer(nil, &Options{Tools: Profiles()})
	defer s.close()
	out := make(map[string]tool.Tool, len(s.list))
	for _, t := range s.list {
		out[t.Spec.Name] = t
	}
	return out
})

// CallNames returns the name of every tool of every profile and of the
// other requests audited as calls (resources/read): the names a call can
// have. Any other name is one a client made up. It is safe for concurrent
// use.
func CallNames() []string {
	names := append(slices.Collect(maps.Keys(allTools())), resources.ReadName)
	slices.Sort(names)
	return names
}

// Example is one documented call of a tool: the calls that prepare a fresh
// depot for it, the call itself and its recorded reply.
type Example struct {
	// Title says what the example shows, e.g. "A text file at a known path".
	Title string `json:"title"`
	// Setup are calls made first, in order, on an empty depot; each must
	// succeed.
	Setup []ExampleCall `json:"setup,omitempty"`
	// Arguments are the call's arguments, a JSON object.
	Arguments json.RawMessage `json:"arguments"`
	// Reply is the reply's structured content; for a reply with text only,
	// the JSON the text holds, or else the text as a JSON string.
	Reply json.RawMessage `json:"reply"`
	// IsError is the reply's isError flag.
	IsError bool `json:"is_error,omitempty"`
	// Ignore lists the parts of the reply that differ from run to run
	// (times), as dotted paths into the reply's JSON ("*" matches any key
	// or index), which tests do not compare.
	Ignore []string `json:"ignore,omitempty"`
}

// ExampleCall is one tool call of an example's setup.
type ExampleCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// WriteToolDocs writes the Markdown reference of every tool a Server with
// opts registers (Options.Tools chooses the profiles), in registration
// order: what "depotfs tools" prints and docs/tools.md's tool reference
// embeds. Descriptions and schemas carry the limits of opts. It needs no
// store and starts nothing; it is safe for concurrent use.
func WriteToolDocs(w io.Writer, opts *Options) error {
	s := newServer(nil, opts)
	defer s.close()
	registered := s.mcp.ListTools()
	if len(s.list) != len(registered) {
		return fmt.Errorf("mcpserver: %d tools registered, %d declared", len(registered), len(s.list))
	}
	tools := make([]markdown.Tool, 0, len(s.list))
	for _, t := range s.list {
		reg, ok := registered[t.Spec.Name]
		if !ok {
			return fmt.Errorf("mcpserver: tool %s is declared but not registered", t.Spec.Name)
		}
		examples, err := examplesOf(t)
		if err != nil {
			return err
		}
		doc := markdown.Tool{Def: reg.Tool, Profile: string(t.Profile), Reference: t.Docs.Reference(t.Spec.Name)}
		doc.Output, _ = t.Docs.OutputSchema(t.Spec.Name)
		for _, ex := range examples {
			doc.Examples = append(doc.Examples, markdown.Example{Title: ex.Title, Arguments: ex.Arguments, Reply: ex.Reply, IsError: ex.IsError})
		}
		tools = append(tools, doc)
	}
	return markdown.Write(w, tools)
}

// examplesOf returns the documented examples of t.
func examplesOf(t tool.Tool) ([]Example, error) {
	raw, ok := t.Docs.Examples(t.Spec.Name)
	if !ok {
		return nil, nil
	}
	var out []Example
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("mcpserver: examples of %s: %w", t.Spec.Name, err)
	}
	return out, nil
}
