// Package seal encrypts content at rest: the keys and the sealed form of a
// chunk. It owns the key model and the bytes of a sealed chunk; which bytes
// a store seals, and where it keeps them, are the store's. It must not
// import the stores, vfs or mcpserver.
//
// # Keys
//
// A [Key] (the data key) seals content. It is random, made once for a
// depot, and stored only wrapped by a key-encryption key, a [Wrapper]: a
// key file now ([FileKey]), a KMS behind the same three methods later.
// The wrapped data key and the id of the key that wraps it travel
// together as a [Record], which the store keeps in its metadata; opening
// it with another key-encryption key fails with [ErrWrongKey] naming the
// id it expected. Rotating the key-encryption key rewraps the data key
// ([Rewrap]): one small record, whatever the depot holds.
//
// The AEAD key is derived from the data key with HKDF-SHA-256. A version
// 2 record ([NewKeyedRecord]) also holds an address key, wrapped the same
// way, for [Key.Address], an HMAC-SHA-256 of a content's plain SHA-256
// that the store names content by ([Key.Keyed]), so that someone who holds
// only the disk cannot confirm a guessed file by its hash. Two more keys
// are derived from the address key: one for [Key.SealSum], which enciphers
// a plain hash a record must keep, and one for [Key.SealRecord], which
// seals records that name content. A new data key ([Renew]) keeps the
// address key, so none of these change. A version 1 record has no address
// key: its store names content by the plain hash.
//
// # Chunks
//
// A sealed chunk is a version byte, a random 192-bit nonce, and the
// XChaCha20-Poly1305 ciphertext with its 16-byte tag. The caller passes
// the chunk's identity and position (the store key it lives under) as
// associated data, so a chunk moved to another content or another place
// fails to open, as does any flipped byte: [ErrTampered], never bytes.
//
// XChaCha20-Poly1305 over AES-256-GCM (DESIGN.md, "Sealing"): both run
// faster than the SHA-256 every byte already goes through, and the
// 192-bit nonce can be drawn at random for every chunk without a count
// limit or any state that a crash, a restore from backup or two hosts
// sharing a data key could make repeat. GCM's 96-bit random nonces are
// safe for about 2^32 chunks under one key, and a derived nonce repeats
// when the same position is written twice with other bytes.
//
// # Concurrency
//
// A Key and a FileKey are safe for concurrent use. Byte slices passed in
// are not retained.
package seal
