package bolt

import "context"

// Ping commits an empty write transaction, through the same group commit
// and fsync as every write, and returns its error: nil means the store can
// commit now. depotfs serve's /healthz and systemd watchdog call it. It is
// safe for concurrent use.
func (s *Store) Ping(ctx context.Context) error {
	return s.update(ctx, func(*wtx) error { return nil })
}
