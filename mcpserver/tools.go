package mcpserver

import (
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// access says what a tool does with the entries a path argument names.
type access uint8

// The accesses of a path argument; a tool that both reads and removes
// (move's source) declares both.
const (
	accessRead  access = 1 << iota // reads content, lists or stats
	accessWrite                    // creates, replaces or removes
)

// pathArg is one argument of a tool that names depot paths, and what the
// tool does there. The wrapper and the audit rely on these declarations; a
// test checks that every path-like argument of every input schema is
// declared.
type pathArg struct {
	name   string
	access access
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

// toolList returns every tool the server offers, profile by profile. Each
// tool (or profile of tools) lives in its own files and adds itself here,
// the one list of what the server offers.
func (s *Server) toolList() []tool {
	list := []tool{
		s.cacheFileTool(),
		s.listDirectoryTool(),
		s.readFileTool(),
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
