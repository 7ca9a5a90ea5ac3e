package audit

// Early records. A write's record says what the write did, which is known
// once its transaction has run, while the store's commit (bbolt's two
// fdatasyncs) is still to come. Writing the record then, and starting its
// fsync at once, makes the call wait for the longer of the two flushes
// instead of their sum. What keeps the log honest at every crash point:
//
//   - The checkpoint never passes an early record until it is settled:
//     Committed or Confirm once the change is durable, or Amend with a
//     record saying the commit failed, once that record is durable. So a record the
//     checkpoint covers describes a change that is in the store, or is
//     followed, within the checkpoint, by the record that says it is not.
//   - A crash before the settlement leaves the early record past the
//     checkpoint, where Open keeps it and names it in a recovery record as
//     never acknowledged, as it does a record whose checkpoint was not
//     written: its call got no reply, and its change may or may not be in
//     the store.
//   - The call is answered only after Confirm returns: its record and a
//     checkpoint at or past it are durable, as after Append.

// AppendEarly writes r as the next record, as Append does, for a call
// whose change is being committed, and returns once r is written: its
// fsync starts at once and runs while the change commits. The caller
// must then settle r, whatever happens: Confirm once the change is
// durable, Amend if it is not. Until then the checkpoint stops before r,
// and every Append after r waits for it. It is safe for concurrent use.
func (l *Log) AppendEarly(r *Record) error {
	if _, _, err := l.append(r, true); err != nil {
		return err
	}
	select {
	case l.now <- struct{}{}:
	default: // a sync is already asked for, and covers r once it runs
	}
	return nil
}

// Committed settles early, a record written by AppendEarly whose change
// is now durable, without waiting: the checkpoint may pass it. The store
// calls it for every write of a group commit at once, so that one
// checkpoint covers them all; Confirm still makes the call wait for it.
func (l *Log) Committed(early *Record) { l.settle(early.Seq) }

// Confirm settles early, a record written by AppendEarly whose change is
// now durable (if Committed did not already): it returns once early and a
// checkpoint at or past it are durable, as Append does for its record. r
// is the call's record as of its end; it is not written (early says what
// the call did), but a wrapper that counts calls counts it, as Amend's.
func (l *Log) Confirm(early, _ *Record) error {
	l.settle(early.Seq)
	return l.sync(early.Seq)
}

// Amend settles early, a record written by AppendEarly whose change did
// not become durable (its commit failed): it writes r, the call's outcome,
// with r.Amends naming early, and returns once r and a checkpoint at or
// past it are durable. early stays pending until r is durable, so no
// checkpoint covers early without r. If r cannot be written, early is
// settled all the same (a checkpoint must not wait for ever) and the
// error returned: the log is failing, calls are refused, and the caller
// keeps r to write it later.
func (l *Log) Amend(early, r *Record) error {
	r.Amends = early.Seq
	seq, _, err := l.append(r, false)
	if err == nil {
		err = l.syncLog(seq)
	}
	l.settle(early.Seq)
	if err != nil {
		return err
	}
	return l.checkpoint(seq, true)
}

// settle ends seq's pending state and wakes the checkpoints waiting for
// it.
func (l *Log) settle(seq uint64) {
	l.mu.Lock()
	delete(l.pending, seq)
	l.mu.Unlock()
	l.cpMu.Lock()
	l.cpSettled.Broadcast()
	l.cpMu.Unlock()
}
