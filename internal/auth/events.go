package auth

import (
	"context"
	"time"

	"github.com/depotfs/depotfs/internal/identity"
)

// Stage says where an authentication failed.
type Stage string

// Stages.
const (
	StageHandshake Stage = "handshake" // the TLS handshake of a new or resumed connection
	StageRequest   Stage = "request"   // an HTTP request on an established connection
)

// Failure describes one refused authentication: a TLS handshake that
// failed or an HTTP request that was answered 401.
type Failure struct {
	Time   time.Time
	Stage  Stage
	Remote string // the peer's address
	// Method is the credential that was tried: identity.MethodCert,
	// identity.MethodToken, or identity.MethodNone when there was none.
	Method identity.Method
	// Subject, Serial and TokenID describe the credential as far as it
	// could be read, for an operator to recognise it; they are claims, not
	// verified facts.
	Subject string
	Serial  string
	TokenID string
	// Resumed is true for a handshake that resumed an earlier TLS session.
	Resumed bool
	// Reason is the short code of Err (see Reason).
	Reason string
	Err    error
	// Count is how many refusals this Failure stands for: 0 or 1 for one;
	// more for the summary of a burst from one address (Bursts), whose
	// other fields are those of the latest.
	Count int
}

// EventSink receives every refused authentication, for the audit log.
// AuthFailure is called from many goroutines at once and must be safe for
// that; it must not block for long, since a handshake or request waits for
// it. The refusal stands whatever the sink does.
type EventSink interface {
	AuthFailure(ctx context.Context, f Failure)
}
