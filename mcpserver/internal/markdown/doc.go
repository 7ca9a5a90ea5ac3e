// Package markdown renders MCP tool definitions as Markdown: for each tool its
// name, title, profile and annotations, its long reference (or, without
// one, its description), a table of its arguments generated from its input
// schema (type, required or optional, default, constraints such as enums,
// patterns and bounds), the schema of its replies, examples of calls with
// their replies, and its security notes. It is the reference
// "depotfs tools" prints and docs/tools.md embeds, generated from the tools
// exactly as a server registers them, so it cannot describe arguments a
// tool does not have.
//
// The package only formats: it never calls a tool. Examples come from the
// caller, which is expected to check them against a real server (package
// mcpserver does, in its tests).
//
// # Descriptions
//
// A description or reference is plain text, as MCP clients show it to models. It is
// rendered paragraph by paragraph (paragraphs are separated by blank
// lines), with Markdown's special characters escaped and line breaks kept.
// A paragraph that starts with "Security:" is moved to the tool's Security
// section; a tool without one is documented as having no security notes.
//
// This package must not import mcpserver: it depends only on the wire
// shape of a tool (package mcp of mcp-go).
package markdown
