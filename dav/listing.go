package dav

import (
	"bufio"
	"fmt"
	"html"
	"net/http"
	"path"
	"time"

	"github.com/depotfs/depotfs/httpfile"
	"github.com/depotfs/depotfs/store"
)

// listHTML answers a browser's GET of a directory: a plain HTML page
// listing its entries, written as they are visited.
func listHTML(w http.ResponseWriter, r *http.Request, loc location, entries []store.Entry) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "private, no-cache")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	title := html.EscapeString(loc.url + "/")
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head><body>\n<h1>%s</h1>\n<table>\n", title, title)
	if loc.url+"/" != Prefix {
		fmt.Fprint(bw, "<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n")
	}
	for _, e := range entries {
		name := path.Base(e.Path)
		size := fmt.Sprint(e.Size)
		if e.IsDir() {
			name += "/"
			size = ""
		}
		fmt.Fprintf(bw, "<tr><td><a href=\"%s\">%s</a></td><td>%s</td><td>%s</td></tr>\n",
			html.EscapeString(loc.href(e)), html.EscapeString(name), size, httpfile.ModTime(e).UTC().Format(time.RFC3339))
	}
	fmt.Fprint(bw, "</table>\n</body></html>\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("listing: %w", err)
	}
	return nil
}

// created is e's creation time, else its modification time.
func created(e store.Entry) time.Time {
	if !e.Created.IsZero() {
		return e.Created
	}
	return httpfile.ModTime(e)
}
