package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// mistake is one call an agent gets wrong, and what depotfs must answer.
type mistake struct {
	name string
	tool string
	args map[string]any
	// fix lists texts the reply must contain: a refusal names the fix
	// (what to send instead, or which tool to call), an accepted call
	// names what it did in a warning. Each entry may give alternatives
	// separated by "|".
	fix []string
	// accept: the call succeeds (with a warning when fix is not empty);
	// otherwise it must be refused and change nothing.
	accept bool
	// same: an accepted call that must change nothing either.
	same bool
}

// reply is one tool reply as the mistakes table judges it, whatever the
// profile's shape.
type reply struct {
	isError  bool
	raw      string   // the text content
	text     string   // the reply's strings as the agent reads them
	internal bool     // depotfs failed internally (error type system, internal_error)
	warnings []string // the guide envelope's warnings
}

// callAny calls a tool of any profile and reads its reply.
func callAny(d *daemon, tool string, args map[string]any) (reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := d.client.CallTool(ctx, req)
	if err != nil {
		return reply{}, fmt.Errorf("%s: protocol error: %w", tool, err)
	}
	r := reply{isError: res.IsError}
	var raw string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			raw += tc.Text
		}
	}
	r.raw, r.text = raw, raw
	var all any
	if json.Unmarshal([]byte(raw), &all) == nil {
		r.text = strings.Join(texts(all, nil), "\n")
	}
	var shapes struct {
		Warnings []string `json:"warnings"`
		Error    any      `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &shapes) == nil {
		r.warnings = shapes.Warnings
		switch e := shapes.Error.(type) {
		case map[string]any: // guide envelope {type}, fs {code}
			r.internal = e["type"] == "system" || e["code"] == "internal_error"
		case string: // provider {"error", "error_type"}
			r.internal = strings.Contains(e, "failed internally")
		}
	}
	return r, nil
}

// mistakesFile is the table of mistaken calls (see its header).
const mistakesFile = "testdata/mistakes.jsonl"

// loadMistakes reads mistakesFile, with its placeholders filled: strings
// holds the values substituted inside strings ({{mnt}}), numbers those
// that replace a whole string ("{{gone}}").
func loadMistakes(t *testing.T, strs map[string]string, numbers map[string]uint64) []mistake {
	t.Helper()
	raw, err := os.ReadFile(mistakesFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []mistake
	seen := map[string]bool{}
	for i, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var c struct {
			Name   string         `json:"name"`
			Tool   string         `json:"tool"`
			Args   map[string]any `json:"args"`
			Fix    []string       `json:"fix"`
			Accept bool           `json:"accept"`
			Same   bool           `json:"same"`
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil || c.Name == "" || c.Tool == "" || c.Args == nil || seen[c.Name] {
			t.Fatalf("%s:%d: not a case with a new name, a tool and args (%v): %s", mistakesFile, i+1, err, line)
		}
		seen[c.Name] = true
		out = append(out, mistake{name: c.Name, tool: c.Tool, args: fillCase(c.Args, strs, numbers).(map[string]any), fix: c.Fix, accept: c.Accept, same: c.Same})
	}
	return out
}

// fillCase substitutes the placeholders of loadMistakes in v, a decoded JSON
// value.
func fillCase(v any, strs map[string]string, numbers map[string]uint64) any {
	switch v := v.(type) {
	case string:
		if n, ok := numbers[v]; ok {
			return n
		}
		for k, s := range strs {
			v = strings.ReplaceAll(v, k, s)
		}
		return v
	case map[string]any:
		for k, x := range v {
			v[k] = fillCase(x, strs, numbers)
		}
	case []any:
		for i, x := range v {
			v[i] = fillCase(x, strs, numbers)
		}
	}
	return v
}

// tally counts the outcomes of the mistaken calls, as the issue tracker
// counts them.
type tally struct {
	refusedWithFix, acceptedAsMeant, unclear, internal, acceptedSilently, silentMount, refusedGood int
}

func (n tally) String() string {
	return fmt.Sprintf("%d refused naming the fix, %d accepted saying what was done, %d unclear (the fix not named), %d internal errors, %d accepted silently (%d of them at a mount path), %d good calls refused",
		n.refusedWithFix, n.acceptedAsMeant, n.unclear, n.internal, n.acceptedSilently, n.silentMount, n.refusedGood)
}

// TestMistakenCalls replays the mistakes agents make with every profile's
// tools (testdata/mistakes.jsonl) and counts what the issue tracker
// counts: refusals that name the fix, unclear ones, internal errors and
// calls accepted silently (mount paths above all). Every refusal must name
// the fix and leave the depot unchanged; there must be no internal error
// and no silent acceptance. bench/mistakes.sh runs it and prints the
// tally: go test ./integration -run TestMistakenCalls -v
func TestMistakenCalls(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tools", "guide,provider,fs", "--rate-calls", "0"}})
	mnt := d.mount
	d.mustCall("guide_cache_file", map[string]any{"path": "/m/a.txt", "content": "alpha\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/m/dir/b.txt", "content": "beta\n"})
	var revs []uint64
	for i := range 6 {
		env := d.mustCall("guide_cache_file", map[string]any{"path": "/m/v.txt", "content": fmt.Sprintf("version %d\n", i)})
		revs = append(revs, uint64(env.Data["revision"].(float64)))
	}
	d.mustCall("guide_list_directory", map[string]any{"path": "/m/ph", "entries": []any{
		map[string]any{"name": "later.bin", "type": "file", "size": 10},
		map[string]any{"name": "pushed.bin", "type": "file", "size": 10},
	}})
	d.mustCall("guide_snapshot", map[string]any{"action": "create", "name": "snap1", "path": "/m"})
	cases := loadMistakes(t, map[string]string{"{{mnt}}": mnt}, map[string]uint64{
		"{{gone}}":    revs[0], // six writes: the first is no longer kept
		"{{rev3}}":    revs[3],
		"{{current}}": revs[len(revs)-1] + 100,
	})

	var n tally
	for _, tc := range cases {
		before := depotRevision(d)
		r, err := callAny(d, tc.tool, tc.args)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		t.Logf("%s: %s", tc.name, r.raw)
		if r.internal {
			n.internal++
			t.Errorf("%s: internal error: %s", tc.name, r.text)
			continue
		}
		missing := missingFixes(r.text, tc.fix)
		switch {
		case tc.accept && r.isError:
			n.refusedGood++
			t.Errorf("%s: refused, want it accepted: %s", tc.name, r.text)
		case tc.accept:
			if after := depotRevision(d); tc.same && after != before {
				t.Errorf("%s: the call changed the depot: revision %d, then %d", tc.name, before, after)
			}
			if len(missing) == 0 {
				n.acceptedAsMeant++
				break
			}
			n.acceptedSilently++
			if usesMount(tc.args, mnt) {
				n.silentMount++
			}
			t.Errorf("%s: accepted without saying %q: %s", tc.name, missing, r.text)
		case !r.isError:
			n.acceptedSilently++
			if usesMount(tc.args, mnt) {
				n.silentMount++
			}
			t.Errorf("%s: accepted, want a refusal: %s", tc.name, r.text)
		default:
			if len(missing) > 0 {
				n.unclear++
				t.Errorf("%s: the refusal does not say %q: %s", tc.name, missing, r.text)
			} else {
				n.refusedWithFix++
			}
			if after := depotRevision(d); after != before {
				t.Errorf("%s: the refused call changed the depot: revision %d, then %d", tc.name, before, after)
			}
		}
	}
	for _, p := range []string{"/m/new.txt", "/m/many.txt", "/m/ph/pushed.bin", "/m/l2/x", "/.snapshots/s3/b.txt"} {
		if _, err := os.Stat(d.path(p)); err != nil {
			t.Errorf("a call at the mount path did not reach the depot path %s: %v", p, err)
		}
	}
	// A mount path taken literally would have put the mount's own path
	// inside the depot.
	if _, err := os.Stat(filepath.Join(mnt, mnt)); err == nil {
		n.acceptedSilently++
		n.silentMount++
		t.Errorf("a mount path was stored inside the depot at %s", mnt)
	}
	t.Logf("TALLY %d mistaken calls: %v", len(cases), n)
	if len(cases) < 93 {
		t.Errorf("only %d cases in %s", len(cases), mistakesFile)
	}
}

// texts returns the strings in v, a decoded JSON value, in no particular
// order: what an agent reads of a reply, without JSON's escapes.
func texts(v any, out []string) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case map[string]any:
		for _, x := range v {
			out = texts(x, out)
		}
	case []any:
		for _, x := range v {
			out = texts(x, out)
		}
	}
	return out
}

// depotRevision is the depot's current revision: any change moves it.
// (A walk of the mount would wait on the placeholders the table reads.)
func depotRevision(d *daemon) uint64 {
	d.t.Helper()
	return uint64(d.mustCall("guide_cache_stats", map[string]any{}).Data["revision"].(float64))
}

// missingFixes returns the entries of fix that text does not contain (an
// entry holds alternatives separated by "|").
func missingFixes(text string, fix []string) []string {
	var missing []string
	for _, f := range fix {
		found := false
		for alt := range strings.SplitSeq(f, "|") {
			found = found || strings.Contains(text, alt)
		}
		if !found {
			missing = append(missing, f)
		}
	}
	return missing
}

// usesMount reports whether a string argument, at any depth, names a path
// under the mount point.
func usesMount(args any, mnt string) bool {
	switch v := args.(type) {
	case string:
		return strings.HasPrefix(v, mnt)
	case map[string]any:
		for _, x := range v {
			if usesMount(x, mnt) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if usesMount(x, mnt) {
				return true
			}
		}
	}
	return false
}
