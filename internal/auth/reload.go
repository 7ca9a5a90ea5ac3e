package auth

// Reload reads the tokens file now, whatever its stat says (depotfs serve
// calls it on SIGHUP), and returns why it is unusable, or nil. Until the
// next change it keeps serving what it read; an unusable file refuses
// every token, as on any other read.
func (t *Tokens) Reload() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.file.started = false
	t.reload(t.now())
	return t.err
}

// Reload reads the CRL file now, whatever its stat says (depotfs serve
// calls it on SIGHUP), and returns why it is unusable, or nil. An
// unusable CRL refuses every certificate, as on any other read.
func (c *CRL) Reload() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.file.started = false
	c.reload(c.now())
	return c.err
}
