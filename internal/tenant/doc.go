// Package tenant names what a limit protects. Every per-caller limit of
// depotfs (sessions, uploads in flight, staged bytes, snapshots, rate) is
// kept per tenant, so several credentials of one tenant share one budget
// and a tenant cannot widen its share by issuing itself more tokens.
//
// A tenant is, in order:
//   - the explicit name a credential carries (a token's "tenant" in the
//     tokens file), as "tenant:<name>";
//   - Operator for a credential that grants everything;
//   - Local for every caller without a credential (the local user on
//     stdio, loopback HTTP without authentication): on a server without
//     authentication there is one tenant;
//   - otherwise the credential's grant prefixes, sorted and without
//     repeats, as "grants:<prefix>,<prefix>...": tokens with one grant are
//     one tenant, whoever they were issued to.
//
// The package has no state; its functions are safe for concurrent use.
package tenant
