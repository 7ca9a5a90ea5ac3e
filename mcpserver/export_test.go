package mcpserver

import "github.com/depotfs/depotfs/internal/grant"

// ToolInfo is what the server declares about one tool besides its MCP
// definition, for tests.
type ToolInfo struct {
	Profile Profile
	Paths   map[string]string // path argument → "r", "w" or "rw"
}

// DeclaredTools returns the declarations of every tool s serves.
func DeclaredTools(s *Server) map[string]ToolInfo {
	out := map[string]ToolInfo{}
	for _, t := range s.list {
		info := ToolInfo{Profile: t.Profile, Paths: map[string]string{}}
		for _, p := range t.Paths {
			a := ""
			if p.Access&grant.Read != 0 {
				a += "r"
			}
			if p.Access&grant.Write != 0 {
				a += "w"
			}
			info.Paths[p.Name] = a
		}
		out[t.Spec.Name] = info
	}
	return out
}

// ToolNames returns the names of the tools s serves, in the order listed,
// duplicates included.
func ToolNames(s *Server) []string {
	names := make([]string, len(s.list))
	for i, t := range s.list {
		names[i] = t.Spec.Name
	}
	return names
}

// OutputSchemas returns the output schema of every tool s serves that has
// one: what its replies' structured content satisfies (not sent in
// tools/list).
func OutputSchemas(s *Server) map[string][]byte {
	out := map[string][]byte{}
	for _, t := range s.list {
		if raw, ok := t.Docs.OutputSchema(t.Spec.Name); ok {
			out[t.Spec.Name] = raw
		}
	}
	return out
}

// OutputSchema returns the output schema of the tool s serves by name, and
// false when it serves no such tool or the tool has none.
func OutputSchema(s *Server, name string) ([]byte, bool) {
	for _, t := range s.list {
		if t.Spec.Name == name {
			return t.Docs.OutputSchema(name)
		}
	}
	return nil, false
}

// References returns the long reference of every tool s serves (what
// docs/tools.md renders), by name.
func References(s *Server) map[string]string {
	out := map[string]string{}
	for _, t := range s.list {
		out[t.Spec.Name] = t.Docs.Reference(t.Spec.Name)
	}
	return out
}

// PendingSessions returns the places reserved for sessions and not yet
// filled or returned, for tests: zero between requests.
func PendingSessions(s *Server) int {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	return s.sessions.pending
}

// examplesDirs are the directories of each profile's examples, under this
// package's source directory.
var examplesDirs = map[Profile]string{
	ProfileGuide:    "internal/guide/doc/examples",
	ProfileProvider: "internal/provider/doc/examples",
	ProfileFS:       "internal/fstools/doc/examples",
}

// ToolExamplesFile returns the examples file of a tool, relative to this
// package's source directory, or "" for an unknown tool.
func ToolExamplesFile(name string) string {
	t, ok := allTools()[name]
	if !ok {
		return ""
	}
	return examplesDirs[t.Profile] + "/" + name + ".json"
}

// ToolExamples returns the documented examples of a tool, none if it has
// no examples file or is unknown. It is safe for concurrent use.
func ToolExamples(name string) ([]Example, error) {
	t, ok := allTools()[name]
	if !ok {
		return nil, nil
	}
	return examplesOf(t)
}
