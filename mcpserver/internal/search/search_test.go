package search_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver/internal/search"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func openStore(t testing.TB) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(t testing.TB, s store.Store, p, data string) {
	t.Helper()
	if _, err := s.Put(context.Background(), store.PutRequest{Path: p, Data: []byte(data)}); err != nil {
		t.Fatal(err)
	}
}

func mustCompile(t testing.TB, pattern string, regex, cs bool) *search.Pattern {
	t.Helper()
	p, err := search.Compile(pattern, regex, cs)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tree is the store most tests search.
func tree(t testing.TB) *bolt.Store {
	t.Helper()
	s := openStore(t)
	put(t, s, "/src/a.go", "package a\n\nfunc Hello() {}\n// hello again\n")
	put(t, s, "/src/b.txt", "one\ntwo\nthree hello\nfour\nfive\n")
	put(t, s, "/src/sub/c.go", "HELLO\r\nworld\r\n")
	put(t, s, "/src/bin.dat", "hello\x00binary")
	put(t, s, "/src/big.txt", strings.Repeat("hello\n", 100))
	put(t, s, "/other/d.go", "hello from elsewhere\n")
	if _, err := s.Declare(context.Background(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/src/later.go", Kind: store.KindFile, Size: 3}}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// summary flattens a result into "path:line:text" strings.
func summary(r search.Result) []string {
	var out []string
	for _, f := range r.Files {
		for _, m := range f.Matches {
			out = append(out, fmt.Sprintf("%s:%d:%s", f.Path, m.Line, m.Text))
		}
	}
	return out
}

func TestRun(t *testing.T) {
	s := tree(t)
	for _, tt := range []struct {
		name     string
		q        search.Query
		want     []string
		searched int
		skipped  [3]int // binary, large, absent
	}{
		{
			name:     "case-insensitive literal",
			q:        search.Query{Root: "/src", Recursive: true, Pattern: mustCompile(t, "hello", false, false), MaxFileSize: 100},
			want:     []string{"/src/a.go:3:func Hello() {}", "/src/a.go:4:// hello again", "/src/b.txt:3:three hello", "/src/sub/c.go:1:HELLO"},
			searched: 3, skipped: [3]int{1, 1, 1},
		},
		{
			name:     "case-sensitive regexp",
			q:        search.Query{Root: "/src", Recursive: true, Pattern: mustCompile(t, `^H[A-Z]+\s*$`, true, true), MaxFileSize: 100},
			want:     []string{"/src/sub/c.go:1:HELLO"},
			searched: 3, skipped: [3]int{1, 1, 1},
		},
		{
			name:     "not recursive",
			q:        search.Query{Root: "/src", Pattern: mustCompile(t, "hello", false, false), MaxFileSize: 100},
			want:     []string{"/src/a.go:3:func Hello() {}", "/src/a.go:4:// hello again", "/src/b.txt:3:three hello"},
			searched: 2, skipped: [3]int{1, 1, 1},
		},
		{
			name:     "file filter",
			q:        search.Query{Root: "/", Recursive: true, Pattern: mustCompile(t, "hello", false, false), Files: func(n string) bool { return strings.HasSuffix(n, ".go") }},
			want:     []string{"/other/d.go:1:hello from elsewhere", "/src/a.go:3:func Hello() {}", "/src/a.go:4:// hello again", "/src/sub/c.go:1:HELLO"},
			searched: 3, skipped: [3]int{0, 0, 1},
		},
		{
			name:     "max results cuts in walk order",
			q:        search.Query{Root: "/", Recursive: true, Pattern: mustCompile(t, "hello", false, false), MaxResults: 3},
			want:     []string{"/other/d.go:1:hello from elsewhere", "/src/a.go:3:func Hello() {}", "/src/a.go:4:// hello again"},
			searched: 2,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, workers := range []int{1, 2, 8} {
				tt.q.Workers = workers
				r, err := search.Run(context.Background(), s, tt.q)
				if err != nil {
					t.Fatal(err)
				}
				if got := summary(r); !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("%d workers: got %q, want %q", workers, got, tt.want)
				}
				if r.FilesSearched != tt.searched || [3]int{r.SkippedBinary, r.SkippedLarge, r.SkippedAbsent} != tt.skipped {
					t.Errorf("%d workers: searched %d, skipped %d/%d/%d; want %d, %v", workers, r.FilesSearched, r.SkippedBinary, r.SkippedLarge, r.SkippedAbsent, tt.searched, tt.skipped)
				}
				if r.TotalMatches != len(tt.want) || r.Truncated != (tt.q.MaxResults == len(tt.want)) {
					t.Errorf("%d workers: total %d truncated %v", workers, r.TotalMatches, r.Truncated)
				}
			}
		})
	}
}

func TestRunContext(t *testing.T) {
	s := tree(t)
	r, err := search.Run(context.Background(), s, search.Query{Root: "/src", Pattern: mustCompile(t, "three", false, true), ContextLines: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []search.Line{{1, "one"}, {2, "two"}, {3, "three hello"}, {4, "four"}, {5, "five"}}
	if len(r.Files) != 1 || !reflect.DeepEqual(r.Files[0].Matches[0].Context, want) {
		t.Fatalf("result %+v, want context %v", r, want)
	}
	r, err = search.Run(context.Background(), s, search.Query{Root: "/src/sub", Pattern: mustCompile(t, "world", false, true), ContextLines: 5})
	if err != nil {
		t.Fatal(err)
	}
	want = []search.Line{{1, "HELLO"}, {2, "world"}}
	if got := r.Files[0].Matches[0].Context; !reflect.DeepEqual(got, want) {
		t.Errorf("context at the end of a CRLF file %v, want %v", got, want)
	}
}

func TestRunLongLine(t *testing.T) {
	s := openStore(t)
	put(t, s, "/long", strings.Repeat("é", search.MaxLineBytes)+"needle")
	r, err := search.Run(context.Background(), s, search.Query{Root: "/", Pattern: mustCompile(t, "needle", false, true)})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Files[0].Matches[0].Text; len(got) > search.MaxLineBytes || !strings.HasPrefix(got, "éé") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("long line shown as %d bytes %q...", len(got), got[:8])
	}
}

func TestRunErrors(t *testing.T) {
	s := tree(t)
	p := mustCompile(t, "x", false, true)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		q    search.Query
		want error
	}{
		{"missing root", context.Background(), search.Query{Root: "/nope", Pattern: p}, store.ErrNotExist},
		{"file root", context.Background(), search.Query{Root: "/src/a.go", Pattern: p}, store.ErrNotDir},
		{"no pattern", context.Background(), search.Query{Root: "/"}, search.ErrPattern},
		{"cancelled", cancelled, search.Query{Root: "/", Recursive: true, Pattern: p}, context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := search.Run(tt.ctx, s, tt.q); !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
		})
	}
	for _, bad := range []struct {
		pattern string
		regex   bool
	}{{"", false}, {"(unclosed", true}, {strings.Repeat("x", search.MaxPatternBytes+1), false}, {"\xff", false}} {
		if _, err := search.Compile(bad.pattern, bad.regex, false); !errors.Is(err, search.ErrPattern) {
			t.Errorf("Compile(%.20q, %v) error %v, want ErrPattern", bad.pattern, bad.regex, err)
		}
	}
}

// BenchmarkRun searches 2,000 files of 10 KiB each for a literal that
// appears in one line of every tenth file.
func BenchmarkRun(b *testing.B) {
	s := openStore(b)
	line := strings.Repeat("lorem ipsum dolor sit amet ", 3) + "\n"
	body := strings.Repeat(line, 10240/len(line))
	for i := range 2000 {
		data := body
		if i%10 == 0 {
			data += "the needle is here\n"
		}
		put(b, s, fmt.Sprintf("/d%02d/f%04d.txt", i%20, i), data)
	}
	p := mustCompile(b, "NEEDLE", false, false)
	b.SetBytes(2000 * int64(len(body)))
	for b.Loop() {
		r, err := search.Run(context.Background(), s, search.Query{Root: "/", Recursive: true, Pattern: p, MaxResults: 1000})
		if err != nil || r.TotalMatches != 200 {
			b.Fatalf("%d matches, %v", r.TotalMatches, err)
		}
	}
}
