package tool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/store"
)

// ErrNoUploadAdmin reports a store that cannot list or drop chunked
// uploads (it does not implement store.UploadAdmin).
var ErrNoUploadAdmin = errors.New("this store cannot list or drop uploads")

// uploads returns the store's uploads, after admitting the call to read
// paths.
func (g *Store) uploads(ctx context.Context, paths ...string) (store.UploadAdmin, []store.UploadInfo, error) {
	if err := g.admit(grant.Read, 0, paths...); err != nil {
		return nil, nil, err
	}
	a, ok := g.rt.st.(store.UploadAdmin)
	if !ok {
		return nil, nil, fmt.Errorf("uploads: %w", ErrNoUploadAdmin)
	}
	ups, err := a.ListUploads(ctx)
	return a, ups, err
}

// ListUploads is store.UploadAdmin.ListUploads for a caller allowed to
// read dir: the uploads of files under dir the caller may read; the
// others are left out, as if they did not exist. An empty dir names no
// directory: every upload the caller may read.
func (g *Store) ListUploads(ctx context.Context, dir string) ([]store.UploadInfo, error) {
	paths := []string{dir}
	if dir == "" {
		paths, dir = nil, depotpath.Root
	}
	_, ups, err := g.uploads(ctx, paths...)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(g.shownUploads(ups), func(u store.UploadInfo) bool {
		return !depotpath.Within(u.Path, dir) || !g.may(u.Path, grant.Read)
	}), nil
}

// DropUploads is store.UploadAdmin.DropUploads for a caller allowed to
// write dir: among the uploads of files under dir (those named by ids;
// nil: all), those idle for at least idle. An upload ids names whose file
// the caller may not write denies the whole call, before anything is
// dropped; with ids nil, such uploads are left out. Dropping frees room,
// so the disk reserve does not apply. An empty dir names no directory:
// every upload.
func (g *Store) DropUploads(ctx context.Context, dir string, ids []string, idle time.Duration) ([]store.UploadInfo, error) {
	a, all, err := g.uploads(ctx)
	if err != nil {
		return nil, err
	}
	// ids are the caller's names; the store's are matched and dropped.
	ids = g.storeIDs(ids, all)
	g.mu.Lock()
	if dir == "" {
		dir = depotpath.Root
	} else {
		err = g.c.authorize(dir, grant.Write)
	}
	var chosen []string
	for _, u := range all {
		if err != nil {
			break
		}
		if _, seen := g.shownID(u.ID); !seen {
			continue
		}
		if !depotpath.Within(u.Path, dir) || ids != nil && !slices.Contains(ids, u.ID) {
			continue
		}
		if ids == nil {
			if !g.may(u.Path, grant.Write) {
				continue
			}
		} else {
			err = g.c.authorize(u.Path, grant.Write)
		}
		chosen = append(chosen, u.ID)
	}
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(chosen) == 0 {
		return nil, nil
	}
	dropped, err := a.DropUploads(ctx, chosen, idle)
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, u := range dropped {
		g.c.committed = true
		g.c.Note(u.Path)
		dropped[i].ID, _ = g.shownID(u.ID)
	}
	return dropped, err
}

// Chunked uploads are named by the client (upload_id), so two identities
// can choose the same id. The store keeps one namespace of ids; the tools
// give each identity its own by storing an upload under the caller's
// namespace (a hash of its key) followed by the client's id. An identity
// therefore never meets another's upload: naming, listing or dropping an
// id finds only its own, and another's id is as unknown to it as one
// never used. A caller with full grants (the operator) also sees the
// uploads of everyone else, by their ids in the store.

// The namespace starts with the caller's tenant's, so what the uploads of
// all its credentials hold is one prefix (--max-upload-bytes-per-identity
// counts per tenant), then the identity's own, so two credentials of one
// tenant choosing the same id never meet.

// namespace is the prefix of the uploads of the calling identity in the
// store.
func (g *Store) namespace() string {
	sum := sha256.Sum256([]byte(g.c.key))
	return g.tenantNamespace() + hex.EncodeToString(sum[:6]) + "."
}

// tenantNamespace is the prefix of the uploads of every identity of the
// caller's tenant in the store.
func (g *Store) tenantNamespace() string {
	sum := sha256.Sum256([]byte(g.c.tenant))
	return hex.EncodeToString(sum[:6]) + "."
}

// storeUploadID is the id in the store of the caller's upload id.
func (g *Store) storeUploadID(id string) string { return g.namespace() + id }

// shownID returns the id by which the caller knows the upload of id in
// the store, and whether it sees that upload at all: its own by the id it
// chose, everyone else's (by their ids in the store) only with full
// grants.
func (g *Store) shownID(id string) (string, bool) {
	if own, ok := strings.CutPrefix(id, g.namespace()); ok {
		return own, true
	}
	return id, g.c.perms.Full()
}

// shownUploads returns the uploads of ups the caller sees (see shownID),
// by the ids it knows them by.
func (g *Store) shownUploads(ups []store.UploadInfo) []store.UploadInfo {
	out := make([]store.UploadInfo, 0, len(ups))
	for _, u := range ups {
		id, ok := g.shownID(u.ID)
		if !ok {
			continue
		}
		u.ID = id
		out = append(out, u)
	}
	return out
}

// storeIDs maps the ids a caller names to ids in the store: its own
// uploads first, then (for a caller with full grants) an id in the store.
// An id that names nothing the caller sees maps to its own namespace,
// where the store finds nothing.
func (g *Store) storeIDs(ids []string, all []store.UploadInfo) []string {
	if ids == nil {
		return nil
	}
	exists := make(map[string]bool, len(all))
	for _, u := range all {
		exists[u.ID] = true
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = g.storeUploadID(id)
		if !exists[out[i]] && g.c.perms.Full() && exists[id] {
			out[i] = id
		}
	}
	return out
}

// UploadBytesLimit is the most the chunked uploads in progress of the
// tenant of who may hold: Env.MaxUploadBytesPerIdentity, or when that is 0
// a quarter of the store's size limit maxStore (0: no limit), so that no
// identity's abandoned uploads can take the room every other identity
// writes into. Like the rate limits, it is for identities with a
// credential: the local user (stdio, unauthenticated loopback HTTP) is
// spared unless RateLocal.
func (e *Env) UploadBytesLimit(who identity.Identity, maxStore int64) int64 {
	if !who.Authenticated() && !e.RateLocal {
		return 0
	}
	if e.MaxUploadBytesPerIdentity > 0 {
		return e.MaxUploadBytesPerIdentity
	}
	return maxStore / 4
}

// checkUploadBytes refuses a chunk of n bytes that would take the
// caller's uploads in progress over their limit.
func (g *Store) checkUploadBytes(ctx context.Context, n int64) error {
	held, limit, err := g.uploadBytes(ctx, false)
	if err != nil || limit <= 0 {
		return err
	}
	if held+n > limit {
		return &Refusal{Type: ErrorLimit,
			Message:     fmt.Sprintf("the chunked uploads in progress of your tenant (%s: every credential with your grants) hold %d bytes; this chunk of %d bytes would take them over %d, the most one tenant's uploads may hold (--max-upload-bytes-per-identity)", g.c.tenant, held, n, limit),
			Instruction: "Finish the uploads you started (send their remaining chunks), or drop the ones you abandoned with guide_drop_uploads, then send this chunk again. Nothing was stored."}
	}
	return nil
}

// UploadBytes returns what the chunked uploads in progress of the
// caller's tenant hold and their limit (0: none); both 0 for a store
// without uploads to list.
func (g *Store) UploadBytes(ctx context.Context) (held, limit int64, err error) {
	return g.uploadBytes(ctx, true)
}

// uploadBytes is UploadBytes; without always, the uploads are not listed
// when there is no limit.
func (g *Store) uploadBytes(ctx context.Context, always bool) (held, limit int64, err error) {
	a, ok := g.rt.st.(store.UploadAdmin)
	if !ok {
		return 0, 0, nil
	}
	st, err := g.rt.st.Stats(ctx)
	if err != nil {
		return 0, 0, err
	}
	limit = g.rt.env.UploadBytesLimit(g.c.who, st.MaxStoreBytes)
	if limit <= 0 && !always {
		return 0, limit, nil
	}
	ups, err := a.ListUploads(ctx)
	ns := g.tenantNamespace()
	for _, u := range ups {
		if !u.Complete && strings.HasPrefix(u.ID, ns) {
			held += u.Bytes
		}
	}
	return held, limit, err
}
