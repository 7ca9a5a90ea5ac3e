package mcpserver

import "github.com/mark3labs/mcp-go/server"

// tools returns every tool the server registers. Each tool (or profile of
// tools) lives in its own file and adds itself here, the one list of what
// the server offers.
func (s *Server) tools() []server.ServerTool {
	return []server.ServerTool{
		s.cacheFileTool(),
		s.listDirectoryTool(),
		s.readFileTool(),
		s.pendingRequestsTool(),
		s.cacheStatsTool(),
	}
}
