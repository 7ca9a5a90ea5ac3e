package integration_test

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// placeholderContent is what the agent sends for a declared file.
func placeholderContent(p string) string { return "needle in " + p + "\n" }

// declareTree lists dirs directories of files placeholders each under root
// and returns their paths.
func declareTree(d *daemon, root string, dirs, files int) []string {
	d.t.Helper()
	var paths []string
	mtime := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC).Format(time.RFC3339)
	for i := range dirs {
		dir := fmt.Sprintf("%s/d%02d", root, i)
		var entries []any
		for j := range files {
			name := fmt.Sprintf("f%02d.txt", j)
			p := dir + "/" + name
			entries = append(entries, map[string]any{"name": name, "type": "file", "size": len(placeholderContent(p)), "mtime": mtime})
			paths = append(paths, p)
		}
		d.mustCall("guide_list_directory", map[string]any{"path": dir, "entries": entries})
	}
	return paths
}

// agent answers pending requests until stopped: each reply of
// guide_pending_requests is answered with one guide_cache_files holding
// every file it lists. rounds counts those calls.
type agent struct {
	rounds atomic.Int64
	stop   func()
}

func startAgent(t *testing.T, d *daemon) *agent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := &agent{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cursor := ""
		for ctx.Err() == nil {
			reqs, next, err := d.pendingRequests(2, cursor)
			if err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			cursor = next
			if len(reqs) == 0 {
				continue
			}
			var files []map[string]any
			for _, r := range reqs {
				files = append(files, map[string]any{"path": r.Path, "content": placeholderContent(r.Path)})
			}
			if _, err := d.tryCall("guide_cache_files", map[string]any{"files": files}); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
			a.rounds.Add(1)
		}
	}()
	a.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(a.stop)
	return a
}

// TestPlaceholderWalk walks a declared tree of 100 placeholders in 10
// directories with cat (blocking opens) while an agent answers each list
// of pending requests with one guide_cache_files: the first open in a
// directory asks for every placeholder of it, so the walk costs one round
// trip per directory, not one per file.
func TestPlaceholderWalk(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--rate-calls", "0"}})
	paths := declareTree(d, "/walk", 10, 10)
	a := startAgent(t, d)
	start := time.Now()
	out := runProgram(t, "sh", "-c", "find "+d.path("/walk")+" -type f | sort | xargs cat")
	took := time.Since(start)
	var want strings.Builder
	sort.Strings(paths)
	for _, p := range paths {
		want.WriteString(placeholderContent(p))
	}
	if out != want.String() {
		t.Errorf("cat printed %d bytes, want %d", len(out), want.Len())
	}
	rounds := a.rounds.Load()
	requested := cacheStats(d)["fetch"]["requested"]
	t.Logf("walk of 100 placeholders in 10 directories: %d agent round trips, %v requests, %v", rounds, requested, took.Round(time.Millisecond))
	if rounds > 12 {
		t.Errorf("the walk took %d round trips of the agent, want about one per directory (10)", rounds)
	}
}

// TestNonblockingScannersAskForPlaceholders runs GNU grep -r and tar, which
// open files with O_NONBLOCK, over declared trees: the first run fails
// (EAGAIN: the content is not there), but the open asked the agent, who
// answers; the second run reads every file.
func TestNonblockingScannersAskForPlaceholders(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--rate-calls", "0"}})
	a := startAgent(t, d)
	for _, tc := range []struct {
		program string
		args    func(dir string) []string
	}{
		{"grep", func(dir string) []string { return []string{"-r", "-c", "needle", dir} }},
		// To a pipe, not /dev/null: tar then reads no file at all.
		{"tar", func(dir string) []string { return []string{"-cf", "-", dir} }},
	} {
		t.Run(tc.program, func(t *testing.T) {
			needProgram(t, tc.program)
			root := "/scan-" + tc.program
			declareTree(d, root, 2, 5)
			first := exec.Command(tc.program, tc.args(d.path(root))...)
			first.Stdout = io.Discard
			if err := first.Run(); err == nil {
				t.Logf("the first %s found the placeholders already answered", tc.program)
			}
			waitFor(t, 30*time.Second, "the agent to answer every request", func() bool {
				reqs, _, err := d.pendingRequests(0, "")
				return err == nil && len(reqs) == 0 && cacheStats(d)["store"]["placeholders"] == 0
			})
			var stderr strings.Builder
			cmd := exec.Command(tc.program, tc.args(d.path(root))...)
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("the second %s: %v\n%s", tc.program, err, stderr.String())
			}
		})
	}
	if a.rounds.Load() == 0 {
		t.Error("the agent was never asked")
	}
}
