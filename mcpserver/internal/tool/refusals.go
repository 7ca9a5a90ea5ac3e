package tool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/store"
)

// A store refusing a write for room or for a quota says why in terms of
// the whole depot: the snapshots of every tenant and the bytes they hold.
// The caller is told only what it may read: the snapshots whose prefix
// it may read (a refusal once named another tenant's snapshot and its
// bytes, which the caller's own listing did not show), and for a quota
// only its own tenant's snapshots and uploads under the prefix.

// mostShown bounds the snapshots a refusal names.
const mostShown = 5

// roomRefusal is err, a store.RoomError re within its context, as the
// caller may read it.
func (g *Store) roomRefusal(err error, re *store.RoomError) error {
	var list []string
	for _, h := range re.Held {
		if len(list) < mostShown && g.may(h.Prefix, grant.Read) {
			list = append(list, fmt.Sprintf("%s (%d bytes)", g.SnapshotName(h.Name), h.Bytes))
		}
	}
	shown := re.Err.Error() + "; what cannot be evicted is held by pins, snapshots or uploads you cannot see"
	if len(list) > 0 {
		shown = fmt.Sprintf("%v; snapshots you may read hold some of the rest: deleting one of %s would make room", re.Err, strings.Join(list, ", "))
	}
	return &Refusal{Type: ErrorLimit, Message: strings.Replace(err.Error(), re.Error(), shown, 1),
		Instruction: "The depot is full and what else it stores may not be evicted. Nothing was stored and nothing was evicted. Delete a snapshot of yours that you no longer need (guide_snapshot), unpin or remove files of yours, or ask the operator for room; then send the call again."}
}

// quotaRefusal is err, a store.QuotaError qe within its context, naming
// what the caller's own tenant holds under the prefix: its snapshots
// there and its uploads in progress there.
func (g *Store) quotaRefusal(ctx context.Context, err error, qe *store.QuotaError) error {
	msg := fmt.Sprintf("%s is over its quota (--quota): it may hold %d bytes, holds %d, and this write would add %d. Everything stored under %s counts: files (pinned ones too), versions that snapshots hold and uploads in progress.",
		qe.Prefix, qe.Limit, qe.Charged, qe.Adding, qe.Prefix)
	var own []string
	if snaps, serr := g.rt.st.Snapshots(ctx); serr == nil {
		for _, s := range snaps {
			if s.Writer == g.c.tenant && (depotpath.Within(s.Prefix, qe.Prefix) || depotpath.Within(qe.Prefix, s.Prefix)) && len(own) < mostShown {
				own = append(own, g.SnapshotName(s.Name))
			}
		}
	}
	if len(own) > 0 {
		msg += " Snapshots of yours holding it: " + strings.Join(own, ", ") + "."
	}
	if a, ok := g.rt.st.(store.UploadAdmin); ok {
		if ups, uerr := a.ListUploads(ctx); uerr == nil {
			n, bytes := 0, int64(0)
			for _, u := range ups {
				if !u.Complete && strings.HasPrefix(u.ID, g.tenantNamespace()) && depotpath.Within(u.Path, qe.Prefix) {
					n, bytes = n+1, bytes+u.Bytes
				}
			}
			if n > 0 {
				msg += fmt.Sprintf(" Uploads of yours in progress there: %d, holding %d bytes.", n, bytes)
			}
		}
	}
	return &Refusal{Type: ErrorLimit, Message: strings.Replace(err.Error(), qe.Error(), msg, 1),
		Instruction: "Nothing was stored and nothing was evicted. Make room under " + qe.Prefix + ": remove files you no longer need, delete snapshots of yours (guide_snapshot), drop abandoned uploads (guide_drop_uploads), or ask the operator to raise the quota; then send the call again."}
}

// StoredQuotas returns the quotas in stored bytes that concern the
// caller, with what each prefix is charged: those whose prefix it may
// read, and those holding a prefix it has a grant on (it writes into
// them). None for a store without quotas.
func (g *Store) StoredQuotas(ctx context.Context) ([]Quota, error) {
	qs, ok := g.rt.st.(store.Quotas)
	if !ok {
		return nil, nil
	}
	uses, err := qs.Quotas(ctx)
	if err != nil {
		return nil, err
	}
	var out []Quota
	for _, u := range uses {
		mine := g.c.perms.Full() || g.may(u.Prefix, grant.Read) || slices.ContainsFunc(g.c.who.Grants, func(gr grant.Grant) bool {
			return depotpath.Within(gr.Prefix, u.Prefix)
		})
		if mine {
			out = append(out, Quota{Name: "stored_bytes", Flag: "--quota", Prefix: u.Prefix, Held: u.Charged, Limit: u.Limit})
		}
	}
	return out, nil
}
