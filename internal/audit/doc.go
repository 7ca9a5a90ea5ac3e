// Package audit keeps depotfs's tamper-evident audit log: one JSON line per
// tool call (allowed or denied) and per refused authentication.
//
// # Records and the chain
//
// A [Record] is written as one line of JSON whose last member is "hash",
// the SHA-256 of the line's bytes without that member (the record's
// canonical bytes: exactly what was hashed, so no re-encoding can hide an
// edit). Each record's "prev" is the hash of the record before it and its
// "seq" is one more than that record's, so editing, deleting, reordering or
// inserting a record breaks the chain at a place [Verify] names.
//
// # The checkpoint
//
// Cutting records off the end leaves a valid chain, so the head of the
// chain (seq and hash) is also kept outside the log, in FILE.checkpoint,
// authenticated with HMAC-SHA-256 under a random key in FILE.key (mode
// 0600). The checkpoint is rewritten after every durable append, in one of
// two fixed slots alternately, so a torn write leaves the other slot valid.
// [Verify] reports a log that ends before the checkpoint's record as
// truncated. The key protects against someone who can change the log but
// not read the key; it does not protect against root on the host, which
// would need an anchor off the host.
//
// # Files
//
// The log is FILE; when a record would make it larger than
// [Options.MaxSize], it is renamed FILE.<seq of its first record, 20
// digits> and a new FILE starts. The chain runs across files: the first
// record of a new file links to the last of the previous one.
//
// # Durability
//
// [Log.Append] returns only after the record is on disk (fsync) and the
// checkpoint updated. Concurrent appends share fsyncs (group commit): each
// waits for one sync that covers its record, so the cost per record falls
// as concurrency rises. When a record cannot be written or synced, Append
// fails, [Log.Err] reports the failure, and the next Append first repairs
// the file (cutting off a partly written line) before writing again.
//
// # Concurrency
//
// A Log is safe for concurrent use. Verify and Scan read files and may run
// while a Log appends to them; they see a prefix of the log.
package audit
