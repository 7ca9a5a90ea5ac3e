package integration_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// rawUpload sends data to path as the tenant, through guide_begin_upload
// and a PUT of the upload URL, and returns the PUT's reply.
func (tn tenant) rawUpload(t testing.TB, path string, data []byte) putReply {
	t.Helper()
	env := tn.call(t, "guide_begin_upload", map[string]any{"path": path, "sha256": sha256hex(data)})
	u, _ := env.Data["upload_url"].(string)
	if !env.Success || u == "" {
		t.Fatalf("guide_begin_upload %s: %+v", path, env.Error)
	}
	return put(t, u, bytes.NewReader(data), int64(len(data)), tn.token)
}

// quotaTenants starts a 64 MiB depot with the guide and fs tools and
// tokens for A (grant /a) and B (grant /b), with args added.
func quotaTenants(t *testing.T, args ...string) (*daemon, tenant, tenant) {
	t.Helper()
	return twoTenants(t, append([]string{"--tools", "guide,fs", "--max-store-size", "64MiB", "--max-file-size", "24MiB",
		"--max-upload-bytes-per-identity", "64MiB"}, args...)...)
}

// holdDeleted has A write files of 8 MiB to /a until all of want are
// written or one is refused, take snapshot name of /a, and delete the
// files it wrote, so that only the snapshot holds them; it returns the
// bytes written and the first refusal (nil: none).
func holdDeleted(t *testing.T, a tenant, name string, want int) (int, *putReply) {
	t.Helper()
	var written []string
	var refused *putReply
	for i := range want {
		p := fmt.Sprintf("/a/hold-%d.bin", i)
		if r := a.rawUpload(t, p, pseudoRandom(8<<20, uint64(100+i))); !r.Env.Success {
			refused = &r
			break
		}
		written = append(written, p)
	}
	if env := a.call(t, "guide_snapshot", map[string]any{"action": "create", "name": name, "path": "/a"}); !env.Success {
		t.Fatalf("A's snapshot: %+v", env.Error)
	}
	for _, p := range written {
		if err := (fsClient{a.c.mcp}).call("delete", map[string]any{"path": p}, nil); err != nil {
			t.Fatalf("A deletes %s: %v", p, err)
		}
	}
	return len(written) * 8 << 20, refused
}

// TestQuotaTwoTenants: with --quota, A cannot take more of a 64 MiB
// depot than its quota, even through a snapshot of files it deleted;
// B's 20 MiB upload then succeeds and evicts nothing of B's; A's own
// next write is refused (limit) naming A's snapshot and nothing of B's.
// Without quotas (the subtest the old main is measured by), A holds
// 56 MiB and B's upload is refused, naming nothing of A's.
func TestQuotaTwoTenants(t *testing.T) {
	t.Parallel()
	big := pseudoRandom(20<<20, 7)
	keep := pseudoRandom(4<<20, 8)
	bWrites := func(t *testing.T, d *daemon, b tenant) putReply {
		t.Helper()
		if env := b.call(t, "guide_cache_file", map[string]any{"path": "/b/keep.bin", "content": base64.StdEncoding.EncodeToString(keep), "encoding": "base64"}); !env.Success {
			t.Fatalf("B's 4 MiB write: %+v", env.Error)
		}
		return b.rawUpload(t, "/b/big.bin", big)
	}
	t.Run("without quotas", func(t *testing.T) {
		t.Parallel()
		d, a, b := quotaTenants(t)
		held, refused := holdDeleted(t, a, "a-private-hold-2026", 7)
		if refused != nil {
			t.Fatalf("A's write without a quota: %+v", refused.Env.Error)
		}
		r := bWrites(t, d, b)
		t.Logf("without quotas: A holds %d MiB through its snapshot; B's 20 MiB upload: success %v, %+v", held>>20, r.Env.Success, r.Env.Error)
		if r.Env.Success {
			t.Fatal("B's upload fit in a depot A's snapshot fills: the case does not reproduce")
		}
		if raw, _ := json.Marshal(r.Env); strings.Contains(string(raw), "a-private-hold") || strings.Contains(string(raw), "/a") {
			t.Errorf("B's refusal names A's holdings: %s", raw)
		}
		if r.Env.Error == nil || r.Env.Error.Type != "limit" {
			t.Errorf("B's refusal: %+v, want limit", r.Env.Error)
		}
	})
	t.Run("with quotas", func(t *testing.T) {
		t.Parallel()
		d, a, b := quotaTenants(t, "--quota", "/a=32MiB", "--quota", "/b=40MiB")
		held, refused := holdDeleted(t, a, "a-private-hold-2026", 7)
		if refused == nil || refused.Env.Error == nil || refused.Env.Error.Type != "limit" {
			t.Fatalf("A wrote 56 MiB under a 32 MiB quota: %+v", refused)
		}
		if held != 32<<20 {
			t.Errorf("A holds %d MiB; want its quota, 32 MiB", held>>20)
		}
		r := bWrites(t, d, b)
		t.Logf("with --quota /a=32MiB: A holds %d MiB through its snapshot (its 5th 8 MiB write refused: %s); B's 20 MiB upload: success %v, evicted %v",
			held>>20, refused.Env.Error.Message, r.Env.Success, r.Env.Stats["evicted_files"])
		if !r.Env.Success {
			t.Fatalf("B's 20 MiB upload with A at its quota: %d %+v", r.Status, r.Env.Error)
		}
		if n, _ := r.Env.Stats["evicted_files"].(float64); n != 0 {
			t.Errorf("B's upload evicted %v files", n)
		}
		for p, want := range map[string][]byte{"/b/keep.bin": keep, "/b/big.bin": big} {
			if got, err := os.ReadFile(d.path(p)); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s through the mount: %d bytes, %v", p, len(got), err)
			}
		}
		env := a.call(t, "guide_cache_file", map[string]any{"path": "/a/more.bin", "content": base64.StdEncoding.EncodeToString(pseudoRandom(1<<20, 9)), "encoding": "base64"})
		raw, _ := json.Marshal(env)
		if env.Success || env.Error.Type != "limit" || !strings.Contains(env.Error.Message, "a-private-hold-2026") || !strings.Contains(env.Error.Message, "/a") {
			t.Errorf("A's write over its quota: %s; want limit naming /a and A's snapshot", raw)
		}
		if strings.Contains(string(raw), "/b") {
			t.Errorf("A's refusal names B's holdings: %s", raw)
		}
		if _, err := os.Stat(d.path("/a/more.bin")); err == nil {
			t.Error("A's refused write was stored")
		}
		// depotfs status shows A its tenant and its quota.
		if code, out := statusCommand(t, []string{"DEPOTFS_TOKEN=" + a.token}, "--url", d.url); code != 0 ||
			!strings.Contains(out, "tenant grants:/a") || !regexp.MustCompile(`stored bytes /a\s+33554432 of 33554432\s+\(--quota\)`).MatchString(out) {
			t.Errorf("depotfs status as A: exit %d\n%s", code, out)
		}
		// Both see their own quota in guide_cache_stats.
		for name, tn := range map[string]tenant{"/a": a, "/b": b} {
			stats := tn.call(t, "guide_cache_stats", map[string]any{})
			caller, _ := stats.Data["caller"].(map[string]any)
			limits, _ := caller["limits"].([]any)
			var shown []string
			for _, l := range limits {
				if q, _ := l.(map[string]any); q["name"] == "stored_bytes" {
					shown = append(shown, fmt.Sprintf("%v=%.0f/%.0f", q["prefix"], q["held"], q["limit"]))
				}
			}
			want := map[string]string{"/a": fmt.Sprintf("/a=%d/%d", 32<<20, 32<<20), "/b": fmt.Sprintf("/b=%d/%d", 24<<20, 40<<20)}[name]
			if len(shown) != 1 || shown[0] != want {
				t.Errorf("%s's quotas in guide_cache_stats: %v; want [%s]", name, shown, want)
			}
		}
	})
}

// TestTenantSharesBudget: five tokens with the same grant are one tenant:
// together they begin no more raw uploads than one may, and stage no more
// bytes of chunked uploads; a token of another grant is not refused.
func TestTenantSharesBudget(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	var same []tenant
	var toks []string
	for i := range 5 {
		tok, _ := issueToken(t, tokens, fmt.Sprintf("ci-%d", i), "*:/a:rw")
		toks = append(toks, tok)
	}
	tokB, _ := issueToken(t, tokens, "other", "*:/b:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: tokB},
		args: []string{"--tokens", tokens, "--max-store-size", "64MiB", "--max-raw-uploads-per-identity", "3", "--max-upload-bytes-per-identity", "2MiB"}})
	for _, tok := range toks {
		same = append(same, tenant{tok, d.connect(clientAuth{bearer: tok})})
	}
	b := tenant{tokB, d.connect(clientAuth{bearer: tokB})}

	begun := 0
	var refusal string
	for i, tn := range same {
		env := tn.call(t, "guide_begin_upload", map[string]any{"path": fmt.Sprintf("/a/raw-%d.bin", i)})
		if !env.Success {
			refusal = env.Error.Message
			continue
		}
		begun++
	}
	if begun != 3 || !strings.Contains(refusal, "max-raw-uploads-per-identity") {
		t.Errorf("five tokens with grant /a began %d raw uploads (refusal %q); want 3, the tenant's limit", begun, refusal)
	}
	if env := b.call(t, "guide_begin_upload", map[string]any{"path": "/b/raw.bin"}); !env.Success {
		t.Errorf("B's raw upload after /a's tenant reached its limit: %+v", env.Error)
	}

	chunk := pseudoRandom(768<<10, 3)
	staged := 0
	refusal = ""
	for i, tn := range same {
		env := tn.call(t, "guide_read_file", map[string]any{"path": fmt.Sprintf("/a/chunked-%d.bin", i), "upload_id": "job",
			"chunk_index": 0, "chunk_count": 4, "content": base64.StdEncoding.EncodeToString(chunk), "encoding": "base64",
			"sha256": strings.Repeat("0", 64)})
		if !env.Success {
			refusal = env.Error.Message
			continue
		}
		staged += len(chunk)
	}
	t.Logf("five tokens of one tenant: %d raw uploads begun, %d bytes staged before the tenant's limits", begun, staged)
	if staged != 2*len(chunk) || !strings.Contains(refusal, "max-upload-bytes-per-identity") {
		t.Errorf("five tokens with grant /a staged %d bytes (refusal %q); want %d, the tenant's 2 MiB", staged, refusal, 2*len(chunk))
	}
	if env := b.call(t, "guide_read_file", map[string]any{"path": "/b/chunked.bin", "upload_id": "job",
		"chunk_index": 0, "chunk_count": 4, "content": base64.StdEncoding.EncodeToString(chunk), "encoding": "base64",
		"sha256": strings.Repeat("0", 64)}); !env.Success {
		t.Errorf("B's chunk after /a's tenant reached its limit: %+v", env.Error)
	}
	stats := same[4].call(t, "guide_cache_stats", map[string]any{})
	if caller, _ := stats.Data["caller"].(map[string]any); caller["tenant"] != "grants:/a" {
		t.Errorf("the fifth token's tenant: %v; want grants:/a", caller["tenant"])
	}
}

// TestSnapshotNamesPerTenant: a tenant's snapshot names are its own (the
// operator's "nightly" does not take A's), a tenant with write access to
// /a cannot delete the operator's snapshot of /a, and the operator may
// delete any.
func TestSnapshotNamesPerTenant(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	tokOp, _ := issueToken(t, tokens, "operator", "*:/:rw")
	tokA, _ := issueToken(t, tokens, "a", "*:/a:rw")
	tokB, _ := issueToken(t, tokens, "b", "*:/b:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: tokOp}, args: []string{"--tokens", tokens}})
	op := tenant{tokOp, d.connect(clientAuth{bearer: tokOp})}
	a := tenant{tokA, d.connect(clientAuth{bearer: tokA})}
	b := tenant{tokB, d.connect(clientAuth{bearer: tokB})}
	op.call(t, "guide_cache_file", map[string]any{"path": "/a/v1.txt", "content": "one"})
	if env := op.call(t, "guide_snapshot", map[string]any{"action": "create", "name": "nightly", "path": "/a"}); !env.Success {
		t.Fatalf("the operator's snapshot: %+v", env.Error)
	}
	a.call(t, "guide_cache_file", map[string]any{"path": "/a/v2.txt", "content": "two"})
	env := a.call(t, "guide_snapshot", map[string]any{"action": "create", "name": "nightly", "path": "/a"})
	if !env.Success {
		t.Fatalf("A's snapshot named as the operator's: %+v", env.Error)
	}
	snaps, _ := env.Data["snapshots"].([]any)
	mine, _ := snaps[0].(map[string]any)
	if mine["name"] != "nightly" || mine["yours"] != true {
		t.Errorf("A's snapshot is shown as %v", mine)
	}
	mountName := strings.TrimPrefix(fmt.Sprint(mine["mount_path"]), d.mount+"/.snapshots/")
	if _, err := os.Stat(d.path("/.snapshots/" + mountName + "/v2.txt")); err != nil || mountName == "nightly" {
		t.Errorf("A's snapshot in the mount at %q: %v", mountName, err)
	}
	if _, err := os.Stat(d.path("/.snapshots/nightly/v2.txt")); err == nil {
		t.Error("the operator's nightly shows A's later file")
	}
	// A deletes its own nightly, then may not delete the operator's.
	if env := a.call(t, "guide_snapshot", map[string]any{"action": "delete", "name": "nightly"}); !env.Success {
		t.Fatalf("A deletes its own: %+v", env.Error)
	}
	if env := op.call(t, "guide_snapshot", map[string]any{"action": "list"}); len(env.Data["snapshots"].([]any)) != 1 {
		t.Errorf("after A deleted its own, the operator lists %v; want its nightly alone", env.Data["snapshots"])
	}
	env = a.call(t, "guide_snapshot", map[string]any{"action": "delete", "name": "nightly"})
	if env.Success || env.Error.Type != "security" {
		t.Errorf("A deleting the operator's snapshot of /a: %+v; want security", env.Error)
	}
	if _, err := os.Stat(d.path("/.snapshots/nightly/v1.txt")); err != nil {
		t.Errorf("the operator's snapshot after A's attempt: %v", err)
	}
	// B sees none of it; the operator deletes A's second snapshot.
	if env := b.call(t, "guide_snapshot", map[string]any{"action": "list"}); !env.Success || len(env.Data["snapshots"].([]any)) != 0 {
		t.Errorf("B lists %+v %v", env.Error, env.Data["snapshots"])
	}
	env = a.call(t, "guide_snapshot", map[string]any{"action": "create", "name": "weekly", "path": "/a"})
	snaps, _ = env.Data["snapshots"].([]any)
	weekly := strings.TrimPrefix(fmt.Sprint(snaps[0].(map[string]any)["mount_path"]), d.mount+"/.snapshots/")
	if env := op.call(t, "guide_snapshot", map[string]any{"action": "delete", "name": weekly}); !env.Success {
		t.Errorf("the operator deletes A's %s: %+v", weekly, env.Error)
	}
	if env := op.call(t, "guide_snapshot", map[string]any{"action": "delete", "name": "nightly"}); !env.Success {
		t.Errorf("the operator deletes its own: %+v", env.Error)
	}
}
