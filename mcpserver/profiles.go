package mcpserver

import (
	"fmt"
	"slices"
	"strings"

	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// Profile names a set of tools the server offers. A Profile is a plain
// string, safe to share between goroutines.
type Profile = tool.Profile

// The tool profiles.
const (
	// ProfileGuide: the guide_* tools that push content into the depot and
	// report on it. Always served.
	ProfileGuide = tool.ProfileGuide
	// ProfileProvider: the file-provider tools a scanner calls (read_file,
	// read_file_binary, list_directory, file_exists, get_file_stats,
	// calculate_file_hash, find_files), served read-only from the depot.
	ProfileProvider = tool.ProfileProvider
	// ProfileFS: the filesystem tools (list, read, write, mkdir, delete,
	// copy, move, info, search) over the depot namespace.
	ProfileFS = tool.ProfileFS
)

// DefaultMaxReadBytes is the default of Options.MaxReadBytes: 10 MiB, the
// file size limit both the provider and the fs contracts suggest.
const DefaultMaxReadBytes = 10 << 20

// DefaultLinkMinBytes is the default of Options.LinkMinBytes: a
// whole-file read over HTTP of a file larger than 1 MiB answers with a
// resource link, not the content.
const DefaultLinkMinBytes = 1 << 20

// Profiles returns every profile, in the order their tools are registered.
// Each call returns a new slice; it is safe for concurrent use.
func Profiles() []Profile { return []Profile{ProfileGuide, ProfileProvider, ProfileFS} }

// DefaultProfiles returns the profiles served when Options.Tools is nil:
// guide and provider. Each call returns a new slice; it is safe for
// concurrent use.
func DefaultProfiles() []Profile { return []Profile{ProfileGuide, ProfileProvider} }

// ParseProfiles reads a comma-separated list of profile names, such as
// "guide,provider,fs", as the --tools flag takes it. Spaces around names
// are ignored, duplicates are dropped, and guide is added when missing (it
// is always served). An empty list or an unknown name is an error that
// lists the valid names. It is safe for concurrent use.
func ParseProfiles(s string) ([]Profile, error) {
	out := []Profile{ProfileGuide}
	empty := true
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		empty = false
		p := Profile(name)
		if !slices.Contains(Profiles(), p) {
			return nil, fmt.Errorf("unknown tool profile %q; the profiles are %s", name, profileNames())
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if empty {
		return nil, fmt.Errorf("no tool profile named; the profiles are %s", profileNames())
	}
	return out, nil
}

// profileNames lists the profile names for messages.
func profileNames() string {
	names := make([]string, 0, 3)
	for _, p := range Profiles() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

// serves reports whether the server offers the tools of profile p.
func (s *Server) serves(p Profile) bool {
	return p == ProfileGuide || slices.Contains(s.opts.Tools, p)
}

// serverInstructions is what an MCP client shows its model about this
// server: the guide tools, and a paragraph for each further profile served.
func (s *Server) serverInstructions() string {
	text := instructions
	if s.serves(ProfileProvider) {
		text += `

File-provider tools (read_file, read_file_binary, list_directory, file_exists, get_file_stats, calculate_file_hash, find_files) read the depot for a scanner: they reply with the value itself (text, base64, a list of paths, true/false, a stats object, a hex digest) or, on failure, {"error": "...", "error_type": "FileNotFoundError|PermissionError|FileSizeLimitExceededError|FileProviderError"}. A path may be a depot path or the same file under the mount point; a path under /.snapshots/NAME reads snapshot NAME (guide_snapshot).`
	}
	if s.serves(ProfileFS) {
		text += `

Filesystem tools (list, read, write, mkdir, delete, copy, move, info, search) work on the depot as a filesystem rooted at "/": paths are relative to that root. They reply with a JSON object, or on failure {"error": {"code", "message", "details"}}. Writes are stored atomically and visible in the mount as soon as the call returns; copy and move never duplicate content.`
	}
	return text
}
