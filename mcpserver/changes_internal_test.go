package mcpserver

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/depotpath"
)

func TestParseChangesQuery(t *testing.T) {
	for _, tc := range []struct {
		raw, lastID string
		want        changesQuery
		err         string
	}{
		{"", "", changesQuery{prefix: "/", fromNow: true}, ""},
		{"prefix=/src&since=41", "", changesQuery{prefix: "/src", since: 41}, ""},
		{"prefix=%2Fsrc%2F&since=0", "", changesQuery{prefix: "/src"}, ""},
		{"since=5", "9", changesQuery{prefix: "/", since: 9}, ""},
		{"prefix=/a", "12", changesQuery{prefix: "/a", since: 12}, ""},
		{"prefix=src", "", changesQuery{}, "not an absolute depot path"},
		{"prefix=/a/../..", "", changesQuery{}, "not an absolute depot path"},
		{"since=-1", "", changesQuery{}, "not a revision"},
		{"since=+1", "", changesQuery{}, "not a revision"},
		{"since=", "", changesQuery{}, "not a revision"},
		{"since=1e3", "", changesQuery{}, "not a revision"},
		{"since=18446744073709551616", "", changesQuery{}, "out of range"},
		{"since=1&since=2", "", changesQuery{}, "given 2 times"},
		{"cursor=1", "", changesQuery{}, "unknown parameter \"cursor\""},
		{"prefix=%zz", "", changesQuery{}, "not URL-encoded"},
		{"", "abc", changesQuery{}, "Last-Event-ID \"abc\""},
	} {
		got, err := parseChangesQuery(tc.raw, tc.lastID)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("parse(%q, %q) = %+v, %v; want %+v", tc.raw, tc.lastID, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !errors.Is(err, errChangesQuery) || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("parse(%q, %q): %v; want an error naming %q", tc.raw, tc.lastID, err, tc.err)
		}
	}
}

// FuzzParseChangesQuery: any query and Last-Event-ID is refused with
// errChangesQuery or gives a clean absolute prefix, and what it gives is
// what the same request, written out again, gives.
func FuzzParseChangesQuery(f *testing.F) {
	f.Add("prefix=/src&since=41", "")
	f.Add("since=1&since=2", "")
	f.Add("prefix=%2F..%2Fx", "7")
	f.Add("prefix=/a%00b", "")
	f.Add(";", "0009")
	f.Fuzz(func(t *testing.T, raw, lastID string) {
		q, err := parseChangesQuery(raw, lastID)
		if err != nil {
			if !errors.Is(err, errChangesQuery) {
				t.Fatalf("parse(%q, %q): %v, not errChangesQuery", raw, lastID, err)
			}
			return
		}
		if clean, err := depotpath.Clean(q.prefix); err != nil || clean != q.prefix || !strings.HasPrefix(q.prefix, "/") {
			t.Fatalf("parse(%q, %q): prefix %q is not clean and absolute", raw, lastID, q.prefix)
		}
		again := url.Values{"prefix": {q.prefix}}
		if !q.fromNow {
			again.Set("since", strconv.FormatUint(q.since, 10))
		}
		q2, err := parseChangesQuery(again.Encode(), "")
		if err != nil || q2 != q {
			t.Fatalf("parse(%q, %q) = %+v; written out again %+v, %v", raw, lastID, q, q2, err)
		}
	})
}
