package integration_test

import (
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

// TestSeveralHostsQuorumLossOnce: with the two NATS servers that do not
// lead the tree killed, host B receives one call of each kind of write;
// the servers come back 6.5 s later. Every call must then answer success,
// and every host must show each change exactly once: the appended line
// once, the create-new file with its bytes, the move done, the removed
// file gone, the batch and the chunked upload complete.
func TestSeveralHostsQuorumLossOnce(t *testing.T) {
	t.Parallel()
	h := startHostsArgs(t, 3, allProfiles)
	a, b := h.all[0], h.all[1]
	fa := fsClient{a.client}
	a.mustCall("guide_cache_file", map[string]any{"path": "/q/put.txt", "content": "v1\n"})
	a.mustCall("guide_cache_file", map[string]any{"path": "/q/log.txt", "content": "line 1\n"})
	a.mustCall("guide_cache_file", map[string]any{"path": "/q/from.txt", "content": "moved\n"})
	a.mustCall("guide_cache_file", map[string]any{"path": "/q/gone.txt", "content": "bye\n"})
	a.mustCall("guide_read_file", map[string]any{"path": "/q/up.txt", "upload_id": "q-up", "chunk_index": 0, "chunk_count": 2,
		"total_size": 22, "content": "first half\n", "sha256": sha256hex([]byte("first half\nsecond half"))})
	if err := fa.call("list", map[string]any{"path": "q"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, d := range h.all {
		waitContent(t, d.path("/q/gone.txt"), []byte("bye\n"), 10*time.Second)
	}

	leader := h.treeLeader(t)
	var down []int
	for i := range h.cluster.Nodes {
		if i != leader {
			h.cluster.Kill(i)
			down = append(down, i)
		}
	}
	fb := fsClient{b.client}
	calls := map[string]func() error{
		"put": func() error {
			return envErr(b.tryCall("guide_cache_file", map[string]any{"path": "/q/put.txt", "content": "v2\n"}))
		},
		"batch": func() error {
			return envErr(b.tryCall("guide_cache_files", map[string]any{"files": []any{
				map[string]any{"path": "/q/b1.txt", "content": "one\n"}, map[string]any{"path": "/q/b2.txt", "content": "two\n"}}}))
		},
		"append": func() error {
			return fb.call("write", map[string]any{"path": "q/log.txt", "content": "line 2\n", "mode": "append"}, nil)
		},
		"create-new": func() error {
			return fb.call("write", map[string]any{"path": "q/new.txt", "content": "mine\n", "mode": "create_new"}, nil)
		},
		"move": func() error {
			return fb.call("move", map[string]any{"source": "q/from.txt", "destination": "q/to.txt"}, nil)
		},
		"remove": func() error { return fb.call("delete", map[string]any{"path": "q/gone.txt"}, nil) },
		"upload completion": func() error {
			return envErr(b.tryCall("guide_read_file", map[string]any{"path": "/q/up.txt", "upload_id": "q-up", "chunk_index": 1, "chunk_count": 2,
				"total_size": 22, "content": "second half", "sha256": sha256hex([]byte("first half\nsecond half"))}))
		},
	}
	var mu sync.Mutex
	answers := map[string]error{}
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Go(func() {
			err := call()
			mu.Lock()
			answers[name] = err
			mu.Unlock()
		})
	}
	time.Sleep(6500 * time.Millisecond) // the outage the calls must ride out
	for _, i := range down {
		h.cluster.Restart(i)
	}
	wg.Wait()
	for name, err := range answers {
		if err != nil {
			t.Errorf("%s: %v, although the cluster recovered within the write time limit", name, err)
		}
	}
	want := map[string]string{
		"/q/put.txt": "v2\n", "/q/b1.txt": "one\n", "/q/b2.txt": "two\n", "/q/log.txt": "line 1\nline 2\n",
		"/q/new.txt": "mine\n", "/q/to.txt": "moved\n", "/q/up.txt": "first half\nsecond half",
	}
	for _, d := range h.all {
		for p, content := range want {
			waitContent(t, d.path(p), []byte(content), 20*time.Second)
		}
		for _, p := range []string{"/q/from.txt", "/q/gone.txt"} {
			if _, err := os.Stat(d.path(p)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s on %s: %v, want it gone", p, d.mount, err)
			}
		}
	}
}

// envErr is the error of a guide call: the transport's, or the envelope's
// failure.
func envErr(env envelope, err error) error {
	if err != nil {
		return err
	}
	if !env.Success {
		return errors.New(env.Error.Type + ": " + env.Error.Message)
	}
	return nil
}

// startHostsArgs is startHosts with more flags for every host.
func startHostsArgs(t *testing.T, n int, args []string) *hosts {
	t.Helper()
	h := startHostsB(t, 0)
	for range n {
		h.all = append(h.all, startDaemon(t, daemonConfig{transport: overHTTP, args: append([]string{
			"--store", h.cluster.URL(), "--nats-prefix", h.prefix}, args...)}))
	}
	return h
}
