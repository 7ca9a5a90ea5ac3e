package clip_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/depotfs/depotfs/internal/clip"
)

func TestString(t *testing.T) {
	short := strings.Repeat("a", clip.Max)
	if got := clip.String(short); got != short {
		t.Errorf("a string of Max bytes was changed: %q", got)
	}
	long := strings.Repeat("é", 16<<20) // 32 MiB, two bytes a rune
	got := clip.String(long)
	if len(got) > clip.Max+64 || !utf8.ValidString(got) || !strings.Contains(got, "…[33554432 bytes, sha256:") {
		t.Fatalf("clip of 32 MiB: %d bytes %q", len(got), got[max(0, len(got)-80):])
	}
	other := long[:len(long)-2] + "e"
	if clip.String(other) == got {
		t.Error("two long strings with the same head clip to the same string")
	}
}

func FuzzString(f *testing.F) {
	f.Add("guide_cache_file", 8)
	f.Add(strings.Repeat("\xff", 300), 256)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<12 {
			return
		}
		got := clip.N(s, max)
		if len(s) <= max && got != s {
			t.Fatalf("changed a short string")
		}
		if len(got) > max+64 {
			t.Fatalf("clip to %d gave %d bytes", max, len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("clip broke a rune: %q", got)
		}
	})
}
