package resources

import (
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"
)

// sniffLen is how many leading bytes content sniffing looks at, as
// net/http.DetectContentType does.
const sniffLen = 512

// extensionTypes are the media types depotfs knows by file extension before
// asking package mime, whose table depends on the host's mime.types files.
// They cover the text formats agents push most, so that a Go or YAML file
// is served as text on every host.
var extensionTypes = map[string]string{
	".c":     "text/x-c",
	".cc":    "text/x-c++",
	".conf":  "text/plain",
	".cpp":   "text/x-c++",
	".cs":    "text/x-csharp",
	".css":   "text/css",
	".csv":   "text/csv",
	".diff":  "text/x-diff",
	".env":   "text/plain",
	".go":    "text/x-go",
	".h":     "text/x-c",
	".hpp":   "text/x-c++",
	".htm":   "text/html",
	".html":  "text/html",
	".ini":   "text/plain",
	".java":  "text/x-java",
	".js":    "text/javascript",
	".json":  "application/json",
	".jsonl": "application/jsonl",
	".kt":    "text/x-kotlin",
	".log":   "text/plain",
	".lua":   "text/x-lua",
	".md":    "text/markdown",
	".mjs":   "text/javascript",
	".patch": "text/x-diff",
	".php":   "text/x-php",
	".pl":    "text/x-perl",
	".py":    "text/x-python",
	".rb":    "text/x-ruby",
	".rs":    "text/x-rust",
	".rst":   "text/x-rst",
	".sh":    "text/x-shellscript",
	".sql":   "application/sql",
	".svg":   "image/svg+xml",
	".swift": "text/x-swift",
	".toml":  "application/toml",
	".ts":    "text/x-typescript",
	".tsv":   "text/tab-separated-values",
	".txt":   "text/plain",
	".xml":   "application/xml",
	".yaml":  "application/yaml",
	".yml":   "application/yaml",
}

// textTypes are media types outside text/* whose content is text.
var textTypes = map[string]bool{
	"application/javascript": true,
	"application/json":       true,
	"application/jsonl":      true,
	"application/sql":        true,
	"application/toml":       true,
	"application/x-ndjson":   true,
	"application/x-sh":       true,
	"application/xml":        true,
	"application/yaml":       true,
	"application/x-yaml":     true,
}

// mediaType returns the media type of a file from its name and, when the
// extension is unknown, its first bytes (head; nil when the content is not
// available): the extension table above, then package mime, then
// net/http.DetectContentType. Parameters such as charset are dropped. A
// file with an unknown extension and no content gets "".
func mediaType(p string, head []byte) string {
	ext := strings.ToLower(path.Ext(p))
	if t, ok := extensionTypes[ext]; ok {
		return t
	}
	if ext != "" {
		if t := mime.TypeByExtension(ext); t != "" {
			return bare(t)
		}
	}
	if head == nil {
		return ""
	}
	return bare(http.DetectContentType(head))
}

// bare drops the parameters of a media type: "text/plain; charset=utf-8"
// is "text/plain".
func bare(t string) string {
	t, _, _ = strings.Cut(t, ";")
	return strings.TrimSpace(t)
}

// textual reports whether content of media type t, with bytes data, is
// served as text: the type is a text type (text/*, a structured-syntax
// suffix +json or +xml, or one of textTypes), and the bytes are valid UTF-8
// without the control bytes that mark binary data (NUL and the others
// net/http's sniffer treats as binary). Anything else is served as a blob.
func textual(t string, data []byte) bool {
	if !strings.HasPrefix(t, "text/") && !textTypes[t] &&
		!strings.HasSuffix(t, "+json") && !strings.HasSuffix(t, "+xml") {
		return false
	}
	if !utf8.Valid(data) {
		return false
	}
	for _, c := range data {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != 0x1b {
			return false
		}
	}
	return true
}
