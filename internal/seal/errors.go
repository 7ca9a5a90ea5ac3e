package seal

import "errors"

// ErrTampered reports sealed bytes that fail authentication: a flipped
// byte, a truncated chunk, or a chunk stored under another identity.
var ErrTampered = errors.New("sealed content failed authentication")

// ErrWrongKey reports a key-encryption key that is not the one that
// wrapped a data key; the error wrapping it names both key ids.
var ErrWrongKey = errors.New("wrong key")

// ErrNoKey reports a sealed depot opened without a key-encryption key.
var ErrNoKey = errors.New("the depot is sealed and no key was given")

// ErrNotSealed reports a key given for a depot whose content is not
// sealed.
var ErrNotSealed = errors.New("the depot is not sealed")
