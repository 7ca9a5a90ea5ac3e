package main

import (
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/beneath"
)

func TestSameOrigin(t *testing.T) {
	base, _ := url.Parse("https://depot.example.org/mcp")
	for _, tc := range []struct {
		upload string
		same   bool
	}{
		{"https://depot.example.org/upload/x", true},
		{"https://DEPOT.example.org:443/upload/x", true},
		{"http://depot.example.org/upload/x", false},
		{"http://depot.example.org:443/upload/x", false},
		{"https://depot.example.org:8443/upload/x", false},
		{"https://evil.example.org/upload/x", false},
		{"https://depot.example.org.evil.example/upload/x", false},
		{"//depot.example.org/upload/x", false},
		{"/upload/x", false},
	} {
		u, err := url.Parse(tc.upload)
		if err != nil {
			t.Fatal(err)
		}
		if got := sameOrigin(u, base); got != tc.same {
			t.Errorf("sameOrigin(%s, %s) = %v, want %v", tc.upload, base, got, tc.same)
		}
	}
}

func TestPushDest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "proj", "sub")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tc := range []struct{ path, want string }{
		{".", "/w/sub"},
		{"..", "/w/proj"},
		{"../sub/", "/w/sub"},
		{"file.txt", "/w/file.txt"},
		{"/abs/dir/", "/w/dir"},
		{"/", ""},
	} {
		got, err := pushDest(tc.path, "/w")
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), "no name") {
				t.Errorf("pushDest(%q) = %q, %v; want an error", tc.path, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("pushDest(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
}

// TestUnstorable: a name the depot would refuse or store under another
// name is unstorable, saying why; every other name, however unusual, is
// stored as it is.
func TestUnstorable(t *testing.T) {
	for _, tc := range []struct{ rel, why string }{
		{"plain.txt", ""},
		{"sub/caf\u00e9.txt", ""},
		{"space name, 'quotes' and \"more\".txt", ""},
		{"pct%2e%2e", ""},
		{"emoji \U0001F600", ""},
		{"back\\slash.txt", "backslash"},
		{"sub/cafe\u0301.txt", "NFC"},
		{"bad\xff.txt", "UTF-8"},
		{"tab\tname", "control character"},
		{"new\nline", "control character"},
		{"rtl\u202Efdp.exe", "bidirectional"},
		{"\uff0e\uff0e", "\"..\""},
		{"ok/" + strings.Repeat("n", 256), "exceeds the limit"},
	} {
		got := unstorable("/w/tree", tc.rel)
		if (tc.why == "") != (got == "") || !strings.Contains(got, tc.why) {
			t.Errorf("unstorable(%q) = %q, want it to say %q", tc.rel, got, tc.why)
		}
	}
	if _, err := pushDest("back\\slash", "/w"); err == nil || !strings.Contains(err.Error(), "backslash") {
		t.Errorf("pushDest of a PATH named with a backslash: %v, want an error saying why", err)
	}
}

func TestBatchEnd(t *testing.T) {
	entry := func(size int64, dir bool) pushEntry {
		st := beneath.Stat{Size: size}
		if dir {
			st.Mode = os.ModeDir
		}
		return pushEntry{st: st}
	}
	var small []pushEntry
	for range 2500 {
		small = append(small, entry(10, false))
	}
	big := []pushEntry{entry(pushBatchBytes, false), entry(1, false), entry(pushBatchBytes/2, false), entry(pushBatchBytes/2, false), entry(0, true)}
	for _, tc := range []struct {
		name    string
		entries []pushEntry
		cap     int
		want    []int // batch ends
	}{
		{"by count", small, 1000, []int{1000, 2000, 2500}},
		{"halved", small, 250, []int{250, 500, 750}},
		{"by bytes, a large file alone", big, 1000, []int{1, 3, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pusher{batchEntries: tc.cap, batchBytes: pushBatchBytes}
			var got []int
			for start := 0; start < len(tc.entries) && len(got) < len(tc.want); {
				end := p.batchEnd(tc.entries, start)
				got = append(got, end)
				start = end
			}
			if len(got) != len(tc.want) {
				t.Fatalf("ends %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("ends %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestSteadyReader: a file read whole and unchanged is read as it is; one
// written, grown or shrunk while it is read fails before its last byte.
func TestSteadyReader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(f string) error
	}{
		{"unchanged", nil},
		{"rewritten", func(f string) error { return os.WriteFile(f, []byte("BBBBBBBB"), 0o644) }},
		{"grown", func(f string) error { return os.WriteFile(f, []byte("aaaaaaaaaa"), 0o644) }},
		{"shrunk", func(f string) error { return os.Truncate(f, 2) }},
		{"touched", func(f string) error {
			return os.Chtimes(f, time.Now(), time.Now().Add(time.Hour))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(name, []byte("aaaaaaaa"), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, err := beneath.Fstat(f)
			if err != nil {
				t.Fatal(err)
			}
			var sent int64
			r := newSteadyReader(f, name, st, &progress{}, &sent)
			first := make([]byte, 3)
			if _, err := io.ReadFull(r, first); err != nil {
				t.Fatal(err)
			}
			if tc.change != nil {
				if err := tc.change(name); err != nil {
					t.Fatal(err)
				}
			}
			rest, err := io.ReadAll(r)
			got := string(first) + string(rest)
			switch {
			case tc.change == nil && (err != nil || got != "aaaaaaaa" || sent != 8):
				t.Fatalf("read %q (%d sent), %v", got, sent, err)
			case tc.change != nil && (err == nil || !strings.Contains(err.Error(), "changed under depotfs push while it was read")):
				t.Fatalf("read %q after a change, err %v", got, err)
			case tc.change != nil && sent >= 8:
				t.Fatalf("all %d bytes handed over after a change", sent)
			}
		})
	}
}

func TestCheckPublicURL(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"", true},
		{"https://depot.example.org", true},
		{"https://gw.example.org:8443/depot/", true},
		{"http://127.0.0.1:7411", true},
		{"depot.example.org", false},
		{"ftp://depot.example.org", false},
		{"https://", false},
		{"https://depot.example.org/?x=1", false},
		{"https://depot.example.org/#frag", false},
		{"https://user:pw@depot.example.org", false},
	} {
		if err := checkPublicURL(tc.in); (err == nil) != tc.ok {
			t.Errorf("checkPublicURL(%q) = %v, want ok %v", tc.in, err, tc.ok)
		}
	}
}
