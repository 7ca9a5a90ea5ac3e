// Package audit keeps depotfs's tamper-evident audit log: one JSON line per
// tool call (allowed or denied) and per refused authentication. DESIGN.md
// ("Audit") gives the reasons for the choices below.
//
// # Files
//
// FILE holds the records: each [Record] ends with "hash", the HMAC-SHA-256
// under the key in FILE.key (0600) of the line's bytes without that member,
// and carries "seq" and "prev" (the hash of the record before), so an
// edited, deleted, reordered or inserted record breaks the chain where
// [Verify] names it, and a record that chains needs the key. Unkeyed
// records of older depotfs (no "v", plain SHA-256) are vouched for up to
// the checkpoint; past it they are unverified, and after a keyed one a
// forgery.
//
// FILE.checkpoint keeps the head (seq and hash) under the key in two slots
// written alternately, so a cut-off tail shows as a truncation; records
// past it (a crash between a write and its checkpoint) are kept by [Open]
// and named in an [EventRecovery] record. Past [Options.MaxSize], FILE is
// renamed FILE.<seq of its first record, 20 digits> and sealed
// (FILE.<seq>.seal: its ends, links, size, inode and ctime under the key):
// Open reads only the current file and rotated files without a matching
// seal; Verify reads everything. [Options.RetainSize] and
// [Options.RetainAge] delete the oldest rotated files, moving the chain's
// start to FILE.base first. [Open] holds an flock on FILE.lock (naming its
// pid) until [Log.Close]; a second writer gets [ErrLocked].
//
// # Durability and concurrency
//
// [Log.Append] returns once the record is synced and the checkpoint
// updated; concurrent appends share syncs. [Log.AppendEarly] writes the
// record of a change still being committed and starts its sync; the
// checkpoint stops before it until [Log.Confirm] or [Log.Amend] settles
// it (early.go says why every crash point stays honest). [Log.AppendDeferred] (for
// calls that changed nothing) writes the record in the same order and
// returns before it is durable: a flusher goroutine, owned by the Log
// from Open to Close, syncs within [Options.DeferredSync] unless an
// Append's sync covers it first, and Close syncs whatever is left. A failed write or sync fails
// Append, [Log.Err] reports it, and the next Append first cuts off a partly
// written line. A Log is safe for concurrent use; Verify and Scan take no
// lock and see a prefix of a log being written.
package audit
