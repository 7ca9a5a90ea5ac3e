package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/store"
)

// The arguments of a conditional write, declared once here: their names,
// their schema (ConditionSchema adds it to a tool's input schema) and
// their decoder (DecodeCondition).
const (
	argIfRevision = "if_revision"
	argIfAbsent   = "if_absent"
)

// conditionProperties is the schema of the condition arguments, worded
// tersely: every client pays for tools/list's bytes on every session (the
// reference in docs/tools.md says it in full).
var conditionProperties = map[string]any{
	argIfRevision: map[string]any{"type": "integer", "minimum": 1, "description": "Only if still at this revision."},
	argIfAbsent:   map[string]any{"type": "boolean", "description": "Only if the path has no entry."},
}

// ConditionSchema returns spec with the condition arguments added, after
// the others, to the properties of the object its input schema holds at
// the path of keys within (none: the top-level object; "properties",
// "files", "items": each entry of an array files). The rest of the schema
// keeps its bytes and order, which docs/tools.md shows. A schema without
// such an object is a build defect: it panics.
func ConditionSchema(spec mcp.Tool, within ...string) mcp.Tool {
	return addProperties(spec, conditionProperties, within...)
}

// addProperties returns spec with props added, after the others, to the
// properties of the object its input schema holds at the path of keys
// within, as ConditionSchema describes.
func addProperties(spec mcp.Tool, props map[string]any, within ...string) mcp.Tool {
	raw := []byte(spec.RawInputSchema)
	lo, hi := 0, len(raw)
	for _, key := range append(within, "properties") {
		s, e, ok := member(raw[lo:hi], key)
		if !ok {
			panic(fmt.Sprintf("mcpserver: %s input schema has no %q to add arguments to", spec.Name, key))
		}
		lo, hi = lo+s, lo+e
	}
	add, _ := json.Marshal(props) // numbers, strings and booleans: it cannot fail
	add[0] = ','                  // the members follow those already there, if any
	if len(bytes.TrimSpace(raw[lo+1:hi-1])) == 0 {
		add = add[1:]
	}
	spec.RawInputSchema = slices.Concat(raw[:hi-1], add[:len(add)-1], raw[hi-1:])
	return spec
}

// member returns where the value of key lies in the JSON object obj, as
// byte offsets, and false when obj is not an object or has no such key.
func member(obj []byte, key string) (start, end int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0, 0, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, 0, false
		}
		if tok == key {
			end := int(dec.InputOffset())
			return end - len(v), end, true
		}
	}
	return 0, 0, false
}

// Condition is what a conditional write requires of the entry it
// replaces. The zero Condition requires nothing. It is a plain value.
// Embedded in a tool's arguments, args.Fill decodes it; Valid then says
// whether it can hold.
type Condition struct {
	IfRevision uint64 `json:"if_revision"` // non-zero: the entry must be at this revision
	IfAbsent   bool   `json:"if_absent"`   // the path must have no entry
}

// DecodeCondition reads if_revision and if_absent from o (see Valid).
func DecodeCondition(o *args.Object) Condition {
	var c Condition
	o.Fill(&c)
	c.Valid(o)
	return c
}

// Valid records a problem in o when c cannot hold: giving both
// if_revision and if_absent.
func (c Condition) Valid(o *args.Object) {
	if c.IfAbsent && c.IfRevision != 0 {
		o.Problems().Addf(o.Name(argIfAbsent), "cannot be combined with if_revision: a file with a revision is not absent")
	}
}

// Set reports whether c requires anything.
func (c Condition) Set() bool { return c.IfAbsent || c.IfRevision != 0 }

// Apply sets c on req.
func (c Condition) Apply(req *store.PutRequest) {
	req.IfRevision, req.IfAbsent = c.IfRevision, c.IfAbsent
}

// ConflictError reports a conditional write that lost: the path's entry
// is not what the condition required. It wraps the store's refusal
// (store.ErrRevision or store.ErrExist), and carries the entry as it is
// now, so the caller can read it again and retry without another call.
type ConflictError struct {
	Path     string
	Want     Condition
	Current  Current
	StoreErr error
}

// Current describes the entry a conditional write found: its revision
// and content hash, or Exists false when the path has no entry.
type Current struct {
	Exists   bool   `json:"exists"`
	Revision uint64 `json:"revision,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
}

func (e *ConflictError) Error() string {
	want := fmt.Sprintf("revision %d", e.Want.IfRevision)
	if e.Want.IfAbsent {
		want = "no entry"
	}
	if !e.Current.Exists {
		return fmt.Sprintf("conflict at %s: expected %s, and the path has no entry now; nothing was stored", e.Path, want)
	}
	sum := e.Current.SHA256
	if sum == "" {
		sum = "none (no content)"
	}
	return fmt.Sprintf("conflict at %s: expected %s, and it is now at revision %d with sha256 %s; nothing was stored", e.Path, want, e.Current.Revision, sum)
}

// Unwrap returns the store's refusal.
func (e *ConflictError) Unwrap() error { return e.StoreErr }

// Statter is the part of a store a conflict is described from.
type Statter interface {
	Stat(ctx context.Context, path string) (store.Entry, error)
}

// visibleTries and visibleWait bound how long Conflict waits for the write
// that won to become visible: stores commit writes in groups, and a write
// whose condition fails against an earlier write of the same group is
// refused before that group has committed (bolt then rolls the group back
// and commits the earlier write again at once; nats gives it its revision
// when the group lands). The winner shows within milliseconds.
const (
	visibleTries = 100
	visibleWait  = 2 * time.Millisecond
)

// Conflict returns err, or, when err is the store's refusal of condition
// c at path p, a *ConflictError describing the entry at p as it is now:
// once the write that won is visible, so the revision it names is not the
// one the caller expected. A failure to read the entry leaves err as it
// was.
func (c Condition) Conflict(ctx context.Context, st Statter, p string, err error) error {
	if !c.Set() || !(errors.Is(err, store.ErrRevision) || errors.Is(err, store.ErrExist)) {
		return err
	}
	ce := &ConflictError{Path: p, Want: c, StoreErr: err}
	for try := 0; ; try++ {
		cur, serr := current(ctx, st, p)
		if serr != nil {
			return err
		}
		ce.Current = cur
		if !c.holds(ce.Current) || try == visibleTries {
			return ce
		}
		select {
		case <-ctx.Done():
			return ce
		case <-time.After(visibleWait):
		}
	}
}

// holds reports whether c is satisfied by the entry cur.
func (c Condition) holds(cur Current) bool {
	if c.IfAbsent {
		return !cur.Exists
	}
	return cur.Exists && cur.Revision == c.IfRevision
}

// Check fails with a *ConflictError when the entry at p does not satisfy
// c now: an early refusal for a write whose bytes have not arrived yet
// (the store checks again when they commit).
func (c Condition) Check(ctx context.Context, st Statter, p string) error {
	if !c.Set() {
		return nil
	}
	cur, err := current(ctx, st, p)
	if err != nil {
		return &StoreError{Op: "stat", Path: p, Err: err}
	}
	if c.holds(cur) {
		return nil
	}
	storeErr := store.ErrExist
	if !c.IfAbsent {
		storeErr = fmt.Errorf("%w: expected %d, entry is at %d", store.ErrRevision, c.IfRevision, cur.Revision)
	}
	return &ConflictError{Path: p, Want: c, Current: cur, StoreErr: storeErr}
}

// current describes the entry at p, Exists false when there is none.
func current(ctx context.Context, st Statter, p string) (Current, error) {
	e, err := st.Stat(ctx, p)
	switch {
	case errors.Is(err, store.ErrNotExist):
		return Current{}, nil
	case err != nil:
		return Current{}, err
	}
	return Current{Exists: true, Revision: e.Revision, SHA256: e.SHA256}, nil
}
