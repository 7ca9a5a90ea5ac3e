// Package audit keeps depotfs's tamper-evident audit log: one JSON line per
// tool call (allowed or denied) and per refused authentication.
//
// # Records and the chain
//
// A [Record] is written as one line of JSON whose last member is "hash":
// HMAC-SHA-256, under a random key in FILE.key (mode 0600), of the line's
// bytes without that member (the record's canonical bytes: exactly what
// was hashed, so no re-encoding can hide an edit). Each record's "prev" is
// the hash of the record before it and its "seq" is one more than that
// record's, so editing, deleting, reordering or inserting a record breaks
// the chain at a place [Verify] names, and appending a record that chains
// needs the key.
//
// Records carry "v":2. Older depotfs wrote unkeyed records (no "v", plain
// SHA-256); an upgraded log keeps them and continues with keyed records.
// Unkeyed records up to the checkpoint are vouched for by its MAC; unkeyed
// records past it are reported as unverified, and an unkeyed record after
// a keyed one is a forgery.
//
// # The checkpoint
//
// Cutting records off the end leaves a valid chain, so the head of the
// chain (seq and hash) is also kept outside the log, in FILE.checkpoint,
// authenticated under the key. The checkpoint is rewritten after every
// group of durable appends, in one of two fixed slots alternately, so a
// torn write leaves the other slot valid. [Verify] reports a log that ends
// before the checkpoint's record as truncated, and records after it (a
// crash between a write and its checkpoint) as such. [Open] keeps those
// and appends an [EventRecovery] record naming them: never adopted
// silently. The key protects against someone who can change the log but
// not read the key; it does not protect against root on the host, which
// would need an anchor off the host.
//
// # Files, seals and retention
//
// The log is FILE; when a record would make it larger than
// [Options.MaxSize], it is renamed FILE.<seq of its first record, 20
// digits> and a new FILE starts. The chain runs across files: the first
// record of a new file links to the last of the previous one. A rotated
// file gets a seal, FILE.<seq>.seal: its first and last records, its links
// and its size, inode and ctime, under the key. [Open] verifies, record by
// record, the current file and every rotated file without a matching seal
// (then seals it), so a start reads what no start read before, not the
// whole history. [Verify] always reads everything.
//
// [Options.RetainSize] and [Options.RetainAge] delete the oldest rotated
// files; the chain then starts at FILE.base (the first record kept and the
// hash it links to, under the key), so what is kept still verifies and a
// file deleted by anyone else still shows as missing records.
//
// # The writer lock
//
// [Open] holds an flock on FILE.lock (which names its pid) until [Log.Close]:
// a second writer of the same log is refused with [ErrLocked] naming the
// holder. Verify and Scan take no lock.
//
// # Durability
//
// [Log.Append] returns only after the record is on disk (fsync) and the
// checkpoint updated. Concurrent appends share fsyncs (group commit): each
// waits for one sync that covers its record, and one checkpoint write
// covers the whole group, so the cost per record falls as concurrency
// rises. When a record cannot be written or synced, Append
// fails, [Log.Err] reports the failure, and the next Append first repairs
// the file (cutting off a partly written line) before writing again.
//
// # Concurrency
//
// A Log is safe for concurrent use. Verify and Scan read files and may run
// while a Log appends to them; they see a prefix of the log.
package audit
