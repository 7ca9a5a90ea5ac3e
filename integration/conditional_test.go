package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/store/nats/natstest"
)

// counterAgents and counterIncrements shape the counter test: every agent
// increments one shared counter file this many times (50 in a soak).
const counterAgents = 8

var counterIncrements = bySoak(20, 50)

// TestConditionalCounter: 8 agents, each with its own MCP session, each
// increment a counter file 20 times (50 in a soak) by reading it (fs read:
// content and revision) and writing value+1 with if_revision, retrying on
// conflict. Half write with fs write, half with guide_cache_file. No
// increment may be lost: the final value is exactly 8 times the
// increments. On bolt, and on a 3-node NATS cluster with the agents spread
// over three depotfs hosts.
func TestConditionalCounter(t *testing.T) {
	t.Run("bolt", func(t *testing.T) {
		t.Parallel()
		d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tools", "guide,fs", "--rate-calls", "0"}})
		countTo(t, []*daemon{d})
	})
	t.Run("nats", func(t *testing.T) {
		t.Parallel()
		cluster := natstest.Start(t, 3)
		prefix := fmt.Sprintf("cond%d", depotSeq.Add(1))
		var ds []*daemon
		for range 3 {
			ds = append(ds, startDaemon(t, daemonConfig{transport: overHTTP, args: []string{
				"--store", cluster.URL(), "--nats-prefix", prefix, "--tools", "guide,fs", "--rate-calls", "0"}}))
		}
		countTo(t, ds)
	})
}

// countTo runs the counter agents against the hosts ds (agent i on host
// i mod len(ds)) and checks the final value on every host.
func countTo(t *testing.T, ds []*daemon) {
	ds[0].mustCall("guide_cache_file", map[string]any{"path": "/counter.txt", "content": "0"})
	var wg sync.WaitGroup
	conflicts := make([]int, counterAgents)
	for i := range counterAgents {
		d := ds[i%len(ds)]
		c := d.connect(clientAuth{}).mcp
		wg.Go(func() {
			for range counterIncrements {
				for attempt := 0; ; attempt++ {
					if attempt > 1000 {
						t.Errorf("agent %d: 1000 conflicts in a row", i)
						return
					}
					value, rev, err := readCounter(c)
					if err != nil {
						t.Errorf("agent %d: %v", i, err)
						return
					}
					lost, err := writeCounter(c, i%2 == 0, value+1, rev)
					if err != nil {
						t.Errorf("agent %d: %v", i, err)
						return
					}
					if !lost {
						break
					}
					conflicts[i]++
				}
			}
		})
	}
	wg.Wait()
	want := strconv.Itoa(counterAgents * counterIncrements)
	for _, d := range ds {
		waitContent(t, d.path("/counter.txt"), []byte(want), 10*time.Second)
	}
	t.Logf("final value %s; conflicts (retries) per agent: %v", want, conflicts)
}

// readCounter reads the counter through fs read: its value and revision.
func readCounter(c *client.Client) (int, uint64, error) {
	raw, isErr, err := callRaw(c, "read", map[string]any{"path": "counter.txt"})
	if err != nil || isErr {
		return 0, 0, fmt.Errorf("read: %v %s", err, raw)
	}
	var r struct {
		Content  string `json:"content"`
		Metadata struct {
			Revision uint64 `json:"revision"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return 0, 0, fmt.Errorf("read reply %s: %v", raw, err)
	}
	n, err := strconv.Atoi(r.Content)
	if err != nil || r.Metadata.Revision == 0 {
		return 0, 0, fmt.Errorf("read reply %s: no counter value and revision", raw)
	}
	return n, r.Metadata.Revision, nil
}

// writeCounter writes value with if_revision rev, through fs write or
// guide_cache_file, and reports whether it lost the race (a conflict).
func writeCounter(c *client.Client, fsWrite bool, value int, rev uint64) (lost bool, err error) {
	content := strconv.Itoa(value)
	if fsWrite {
		raw, isErr, err := callRaw(c, "write", map[string]any{"path": "counter.txt", "content": content, "if_revision": rev})
		if err != nil {
			return false, err
		}
		if !isErr {
			var r struct {
				Metadata struct{ Revision uint64 } `json:"metadata"`
			}
			if json.Unmarshal(raw, &r) != nil || r.Metadata.Revision <= rev {
				return false, fmt.Errorf("write reply %s: no revision above %d", raw, rev)
			}
			return false, nil
		}
		var f struct {
			Error struct {
				Code    string `json:"code"`
				Details struct {
					Current struct {
						Revision uint64 `json:"revision"`
					} `json:"current"`
				} `json:"details"`
			} `json:"error"`
		}
		if json.Unmarshal(raw, &f) != nil || f.Error.Code != "conflict" || f.Error.Details.Current.Revision == rev {
			return false, fmt.Errorf("write with if_revision %d: %s, want a conflict naming another revision", rev, raw)
		}
		return true, nil
	}
	env, err := callWith(c, "guide_cache_file", map[string]any{"path": "/counter.txt", "content": content, "if_revision": rev})
	if err != nil {
		return false, err
	}
	if env.Success {
		if got, _ := env.Data["revision"].(float64); uint64(got) <= rev {
			return false, fmt.Errorf("guide_cache_file reply revision %v, not above %d", env.Data["revision"], rev)
		}
		return false, nil
	}
	if env.Error.Type != "conflict" || env.Error.Current == nil || env.Error.Current.Revision == rev {
		return false, fmt.Errorf("guide_cache_file with if_revision %d: %+v, want a conflict naming another revision", rev, env.Error)
	}
	return true, nil
}

// callRaw calls a tool and returns its structured content as JSON and
// whether it is an error (for the fs tools, whose replies are not the
// envelope).
func callRaw(c *client.Client, tool string, args map[string]any) (json.RawMessage, bool, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", tool, err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	return raw, res.IsError, err
}

// TestConditionalWriteRefused: every write that takes if_revision or
// if_absent refuses a condition that no longer holds with a conflict
// naming the current revision and sha256, and changes nothing.
func TestConditionalWriteRefused(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tools", "guide,fs", "--rate-calls", "0"}})
	first := d.mustCall("guide_cache_file", map[string]any{"path": "/c/f.txt", "content": "one"})
	stale := uint64(first.Data["revision"].(float64))
	second := d.mustCall("guide_cache_file", map[string]any{"path": "/c/f.txt", "content": "two", "if_revision": stale})
	cur := uint64(second.Data["revision"].(float64))
	curSum := sha256hex([]byte("two"))

	unchanged := func(what string) {
		t.Helper()
		raw, isErr, err := callRaw(d.client, "info", map[string]any{"path": "c/f.txt"})
		if err != nil || isErr || !strings.Contains(string(raw), fmt.Sprintf(`"revision":%d`, cur)) {
			t.Fatalf("%s: the file changed: %s %v", what, raw, err)
		}
		if got, _ := os.ReadFile(d.path("/c/f.txt")); !bytes.Equal(got, []byte("two")) {
			t.Fatalf("%s: the mount shows %q", what, got)
		}
		if _, err := os.Stat(d.path("/c/new.txt")); !os.IsNotExist(err) {
			t.Fatalf("%s: /c/new.txt exists: %v", what, err)
		}
	}
	conflict := func(what string, env envelope) {
		t.Helper()
		if env.Success || env.Error.Type != "conflict" || env.Error.Current == nil ||
			env.Error.Current.Revision != cur || env.Error.Current.SHA256 != curSum ||
			!strings.Contains(env.Error.Message, strconv.FormatUint(cur, 10)) || !strings.Contains(env.Error.Message, curSum) {
			t.Fatalf("%s: %+v, want a conflict naming revision %d and sha256 %s", what, env.Error, cur, curSum)
		}
		unchanged(what)
	}

	conflict("guide_cache_file if_revision", d.call("guide_cache_file", map[string]any{"path": "/c/f.txt", "content": "three", "if_revision": stale}))
	conflict("guide_cache_file if_absent", d.call("guide_cache_file", map[string]any{"path": "/c/f.txt", "content": "three", "if_absent": true}))
	conflict("guide_cache_files", d.call("guide_cache_files", map[string]any{"files": []any{
		map[string]any{"path": "/c/new.txt", "content": "new", "if_absent": true},
		map[string]any{"path": "/c/f.txt", "content": "three", "if_revision": stale},
	}}))
	conflict("guide_begin_upload at begin", d.call("guide_begin_upload", map[string]any{"path": "/c/f.txt", "if_revision": stale}))

	// A writer between guide_begin_upload and its PUT: the PUT loses.
	u := beginUpload(t, d, map[string]any{"path": "/c/f.txt", "if_revision": cur})
	third := d.mustCall("guide_cache_file", map[string]any{"path": "/c/f.txt", "content": "three"})
	cur, curSum = uint64(third.Data["revision"].(float64)), sha256hex([]byte("three"))
	r := put(t, u, strings.NewReader("four"), 4, "")
	if r.Status != 400 || r.Env.Error == nil || r.Env.Error.Type != "conflict" || !strings.Contains(r.Env.Error.Message, curSum) {
		t.Fatalf("PUT after another writer: %d %+v, want a conflict naming sha256 %s", r.Status, r.Env.Error, curSum)
	}
	if got, _ := os.ReadFile(d.path("/c/f.txt")); string(got) != "three" {
		t.Fatalf("after the refused PUT the mount shows %q", got)
	}

	raw, isErr, err := callRaw(d.client, "write", map[string]any{"path": "c/f.txt", "content": "five", "if_revision": stale})
	if err != nil || !isErr || !strings.Contains(string(raw), `"code":"conflict"`) || !strings.Contains(string(raw), fmt.Sprintf(`"revision":%d`, cur)) {
		t.Fatalf("fs write with a stale if_revision: %s %v", raw, err)
	}
	raw, isErr, err = callRaw(d.client, "write", map[string]any{"path": "c/f.txt", "content": "five", "if_absent": true})
	if err != nil || !isErr || !strings.Contains(string(raw), `"code":"conflict"`) {
		t.Fatalf("fs write if_absent over a file: %s %v", raw, err)
	}
	if got, _ := os.ReadFile(d.path("/c/f.txt")); string(got) != "three" {
		t.Fatalf("after the refused fs writes the mount shows %q", got)
	}

	// Conditions that hold write, and a bad combination is a validation error.
	d.mustCall("guide_cache_file", map[string]any{"path": "/c/new.txt", "content": "new", "if_absent": true})
	if env := d.call("guide_cache_file", map[string]any{"path": "/c/g.txt", "content": "x", "if_absent": true, "if_revision": cur}); env.Success || env.Error.Type != "validation" {
		t.Fatalf("if_absent with if_revision: %+v", env.Error)
	}
	if env := d.call("guide_begin_upload", map[string]any{"path": "/c/dir", "format": "tar", "if_absent": true}); env.Success || env.Error.Type != "validation" {
		t.Fatalf("an archive with if_absent: %+v", env.Error)
	}
}
