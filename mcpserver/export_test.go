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
	for _, t := range s.toolList() {
		info := ToolInfo{Profile: t.profile, Paths: map[string]string{}}
		for _, p := range t.paths {
			a := ""
			if p.access&grant.Read != 0 {
				a += "r"
			}
			if p.access&grant.Write != 0 {
				a += "w"
			}
			info.Paths[p.name] = a
		}
		out[t.spec.Name] = info
	}
	return out
}
