package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestProgressBar checks the bar's parts (bytes, files, rate, time left)
// and that it is drawn only when asked for, ending with a newline.
func TestProgressBar(t *testing.T) {
	var w bytes.Buffer
	p := newProgress(&w, 10, 4<<20, true)
	p.bytes.Add(1 << 20)
	p.files.Add(3)
	line := p.line()
	for _, want := range []string{"[######", " 25% ", "1.0 MiB/4.0 MiB", "3/10 files", "/s", "left"} {
		if !strings.Contains(line, want) {
			t.Errorf("bar %q lacks %q", line, want)
		}
	}
	p.stop()
	p.stop() // idempotent
	if out := w.String(); !strings.HasPrefix(out, "\r") || !strings.HasSuffix(out, "\n") {
		t.Errorf("drawn %q, want a redrawn line ending the bar with a newline", out)
	}
	var quiet bytes.Buffer
	q := newProgress(&quiet, 1, 1, false)
	q.stop()
	if quiet.Len() != 0 {
		t.Errorf("a bar not asked for drew %q", quiet.String())
	}
}
