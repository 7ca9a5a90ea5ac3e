package dav

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/depotfs/depotfs/httpfile"
	"github.com/depotfs/depotfs/store"
)

// maxPropfindBody bounds the PROPFIND request body read: a request for
// every property DAV: defines is well under 4 KiB.
const maxPropfindBody = 64 << 10

// errDepth is the failure of a PROPFIND of depth infinity.
var errDepth = fmt.Errorf("%w: PROPFIND with depth infinity", ErrRequest)

// errBody is the failure of a PROPFIND whose body cannot be read.
var errBody = fmt.Errorf("%w: the PROPFIND body is not a DAV:propfind request", ErrRequest)

// propfindBody is the request body: one of allprop, propname, prop.
type propfindBody struct {
	XMLName  xml.Name  `xml:"DAV: propfind"`
	AllProp  *struct{} `xml:"DAV: allprop"`
	PropName *struct{} `xml:"DAV: propname"`
	Prop     *struct {
		Names []struct {
			XMLName xml.Name
		} `xml:",any"`
	} `xml:"DAV: prop"`
}

// liveProps are the properties served, in the order they are written.
var liveProps = []string{"resourcetype", "displayname", "getcontentlength", "getlastmodified", "creationdate", "getetag", "getcontenttype"}

// query is what a PROPFIND asks of each resource.
type query struct {
	names bool       // propname: the names only
	want  []xml.Name // nil: all (allprop)
}

// propfind answers a PROPFIND of depth 0 or 1. The multistatus is
// written as the entries are visited, so a listing costs the entries of
// one directory in memory, whatever their number.
func (h *Handler) propfind(w *recorder, r *http.Request, loc location) error {
	depth := r.Header.Get("Depth")
	if depth != "0" && depth != "1" {
		// RFC 4918 9.1: a missing Depth means infinity.
		w.Header().Set("Content-Type", "application/xml; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, xml.Header+`<D:error xmlns:D="DAV:"><D:propfind-finite-depth/><D:responsedescription>depotfs answers PROPFIND with Depth 0 or 1 only: list one directory at a time</D:responsedescription></D:error>`+"\n")
		return errDepth
	}
	q, err := parseQuery(r)
	if err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return err
	}
	e, err := loc.stat(r.Context())
	if err != nil {
		writeError(w, loc.path, err)
		return err
	}
	var entries []store.Entry
	if depth == "1" && e.IsDir() {
		if entries, err = loc.readDir(r.Context()); err != nil {
			writeError(w, loc.path, err)
			return err
		}
	}
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.WriteHeader(http.StatusMultiStatus)
	bw := bufio.NewWriterSize(w, 64<<10)
	_, _ = io.WriteString(bw, xml.Header+`<D:multistatus xmlns:D="DAV:">`)
	writeResponse(bw, loc.href(e), e, q)
	for _, c := range entries {
		writeResponse(bw, loc.href(c), c, q)
	}
	_, _ = io.WriteString(bw, "</D:multistatus>\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("propfind response: %w", err)
	}
	return nil
}

// parseQuery reads a PROPFIND body; an empty body asks for allprop.
func parseQuery(r *http.Request) (query, error) {
	if r.Body == nil {
		return query{}, nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxPropfindBody+1))
	if err != nil {
		return query{}, fmt.Errorf("%w: %w", errBody, err)
	}
	if len(data) > maxPropfindBody {
		return query{}, fmt.Errorf("%w: over %d bytes", errBody, maxPropfindBody)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return query{}, nil
	}
	var b propfindBody
	if err := xml.Unmarshal(data, &b); err != nil {
		return query{}, fmt.Errorf("%w: %w", errBody, err)
	}
	switch {
	case b.PropName != nil:
		return query{names: true}, nil
	case b.Prop != nil:
		q := query{want: []xml.Name{}}
		for _, n := range b.Prop.Names {
			q.want = append(q.want, n.XMLName)
		}
		return q, nil
	}
	return query{}, nil
}

// writeResponse writes one DAV:response: the properties found, and those
// asked for and not found (404).
func writeResponse(w *bufio.Writer, href string, e store.Entry, q query) {
	_, _ = io.WriteString(w, "<D:response><D:href>")
	_ = xml.EscapeText(w, []byte(href))
	_, _ = io.WriteString(w, "</D:href><D:propstat><D:prop>")
	var missing []xml.Name
	if q.want == nil {
		for _, name := range liveProps {
			writeProp(w, name, e, q.names)
		}
	} else {
		for _, n := range q.want {
			if n.Space != "DAV:" || !writeProp(w, n.Local, e, false) {
				missing = append(missing, n)
			}
		}
	}
	_, _ = io.WriteString(w, "</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>")
	if len(missing) > 0 {
		_, _ = io.WriteString(w, "<D:propstat><D:prop>")
		for _, n := range missing {
			writeEmpty(w, n)
		}
		_, _ = io.WriteString(w, "</D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>")
	}
	_, _ = io.WriteString(w, "</D:response>\n")
}

// writeProp writes the DAV: property name of e (only its name when
// nameOnly), and reports whether e has it.
func writeProp(w *bufio.Writer, name string, e store.Entry, nameOnly bool) bool {
	var value string
	switch name {
	case "resourcetype":
		if e.IsDir() {
			value = "<D:collection/>"
		}
	case "displayname":
		value = escape(path.Base(e.Path))
	case "getlastmodified":
		value = httpfile.ModTime(e).UTC().Format(http.TimeFormat)
	case "creationdate":
		value = created(e).UTC().Format("2006-01-02T15:04:05Z")
	case "getcontentlength", "getetag", "getcontenttype":
		if e.IsDir() {
			return false
		}
		switch name {
		case "getcontentlength":
			value = fmt.Sprint(e.Size)
		case "getetag":
			if e.SHA256 == "" {
				return false // a placeholder whose content is unknown
			}
			value = escape(httpfile.ETag(e.SHA256))
		default:
			value = escape(contentType(e.Path))
		}
	default:
		return false
	}
	if nameOnly {
		value = ""
	}
	if value == "" {
		fmt.Fprintf(w, "<D:%s/>", name)
	} else {
		fmt.Fprintf(w, "<D:%s>%s</D:%s>", name, value, name)
	}
	return true
}

// writeEmpty writes an empty element named n.
func writeEmpty(w *bufio.Writer, n xml.Name) {
	if n.Space == "DAV:" {
		fmt.Fprintf(w, "<D:%s/>", escape(n.Local))
		return
	}
	fmt.Fprintf(w, `<x:%s xmlns:x="%s"/>`, escape(n.Local), escape(n.Space))
}

// escape is s as XML character data.
func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// contentType is the media type a file is served with, by its name.
func contentType(p string) string {
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}
