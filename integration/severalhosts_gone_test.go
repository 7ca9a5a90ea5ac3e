package integration_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSeveralHostsGoneEverywhere: a name host A removed or moved away is
// gone through host B's mount as soon as A acknowledged it, though B had
// just looked it up (its kernel held the entry): stat of the old name
// fails with "no such file", and the new name is there with its content.
// Each round removes a file, moves a file and moves a directory. Before,
// B's kernel answered stat from its entry until B applied A's change.
// 20 rounds, 200 with DEPOTFS_SOAK=1 (on the old main 1 to 5 of 60
// checks in 12 rounds failed, in 3 of 4 runs).
func TestSeveralHostsGoneEverywhere(t *testing.T) {
	t.Parallel()
	h := startHostsArgs(t, 2, allProfiles)
	a, b := h.all[0], h.all[1]
	fa := fsClient{a.client}
	do := func(tool string, args map[string]any) {
		if err := fa.call(tool, args, nil); err != nil {
			t.Fatalf("%s %v on A: %v", tool, args, err)
		}
	}
	var bad []string
	gone := func(p string) {
		if _, err := os.Stat(b.path(p)); !errors.Is(err, fs.ErrNotExist) {
			bad = append(bad, fmt.Sprintf("stat %s: %v, want not found", p, err))
		}
	}
	there := func(p, want string) {
		if got, err := os.ReadFile(b.path(p)); err != nil || string(got) != want {
			bad = append(bad, fmt.Sprintf("read %s: %q, %v, want %q", p, got, err, want))
		}
	}
	// seen writes p through A and has B read it: B's kernel then holds
	// the entries of p and its directories.
	seen := func(p, content string) {
		pushBytes(a, p, []byte(content), nil)
		waitContent(t, b.path(p), []byte(content), 10*time.Second)
		if _, err := os.Stat(b.path(p)); err != nil {
			t.Fatalf("stat %s on B after reading it: %v", p, err)
		}
	}
	n := bySoak(20, 200)
	for i := range n {
		removed := fmt.Sprintf("/gone/r%d.txt", i)
		seen(removed, "removed")
		do("delete", map[string]any{"path": removed[1:]})
		gone(removed)

		from, to := fmt.Sprintf("/gone/m%d.txt", i), fmt.Sprintf("/gone/m%d.moved", i)
		seen(from, "moved file")
		do("move", map[string]any{"source": from[1:], "destination": to[1:]})
		gone(from)
		there(to, "moved file")

		dir, newDir := fmt.Sprintf("/gone/d%d", i), fmt.Sprintf("/gone/e%d", i)
		seen(dir+"/f.txt", "moved dir")
		do("move", map[string]any{"source": dir[1:], "destination": newDir[1:]})
		gone(dir + "/f.txt")
		gone(dir)
		there(newDir+"/f.txt", "moved dir")
	}
	t.Logf("%d removes and %d moves on A, each checked through B's mount right after the acknowledgement: %d wrong", n, 2*n, len(bad))
	if len(bad) > 0 {
		t.Errorf("B's mount after A acknowledged:\n%s", strings.Join(bad, "\n"))
	}
}
