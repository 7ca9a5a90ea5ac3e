package mcpserver

import (
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/grant"
)

// pathArg is one argument of a tool that names depot paths, and what the
// tool does there (a tool that both reads and removes, move's source,
// declares grant.ReadWrite). The permission checks and the audit rely on
// these declarations; a test checks that every path-like argument of every
// input schema is declared.
type pathArg struct {
	name   string
	access grant.Access
}

// tool is one tool the server registers: its definition, the profile it
// belongs to, its path arguments, the shape of its replies and its body.
// Every tool is served through Server.handler.
type tool struct {
	spec    mcp.Tool
	profile Profile
	paths   []pathArg
	shape   replyShape
	run     toolFunc
}

// def is what the permission checks need to know of t: a grant may name
// the tool or its profile, and each path argument needs its access.
func (t tool) def() toolDef {
	d := toolDef{name: t.spec.Name, group: string(t.profile), paths: make(map[string]grant.Access, len(t.paths))}
	for _, p := range t.paths {
		d.paths[p.name] = p.access
	}
	return d
}

// toolList returns every tool the server offers, profile by profile. Each
// tool (or profile of tools) lives in its own files and adds itself here,
// the one list of what the server offers.
func (s *Server) toolList() []tool {
	list := []tool{
		s.cacheFileTool(),
		s.listDirectoryTool(),
		s.readFileTool(),
		s.pendingRequestsTool(),
		s.cacheStatsTool(),
	}
	if s.serves(ProfileProvider) {
		list = append(list, s.providerTools()...)
	}
	if s.serves(ProfileFS) {
		list = append(list, s.fsTools()...)
	}
	return list
}

// tools returns the tools of toolList wrapped for mcp-go.
func (s *Server) tools() []server.ServerTool {
	list := s.toolList()
	out := make([]server.ServerTool, len(list))
	for i, t := range list {
		out[i] = server.ServerTool{Tool: t.spec, Handler: s.handler(t)}
	}
	return out
}
