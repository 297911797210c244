package store

import (
	"strings"

	"github.com/google/uuid"
)

// Change is what a notification on the permission channel
// (ListenAuthzChanges) announces. The payload names as little as the
// replicas need to drop no more than the change touched: anything it does
// not name exactly is read as ChangeAll, which drops everything.
type Change struct {
	Kind ChangeKind
	// Session is the session that ended (ChangeSessionEnded): a
	// canonical lower-case UUID.
	Session string
}

// ChangeKind is the kind of a Change.
type ChangeKind int

const (
	// ChangeAll: permissions or identities may have changed anywhere
	// (tuples delivered to OpenFGA, an identity disabled, a gap in the
	// notifications); every cache resting on them is dropped.
	ChangeAll ChangeKind = iota
	// ChangeSigningKeys: the signing keys were rotated or revoked.
	ChangeSigningKeys
	// ChangeSessionEnded: one session ended (logout, a refresh token
	// presented again): only what rests on it is dropped.
	ChangeSessionEnded
)

// Payloads of the notifications: "" is ChangeAll.
const (
	signingKeysPayload   = "signing-keys"
	sessionEndedPrefix   = "session:"
	maxChangePayloadSize = len(sessionEndedPrefix) + 36
)

// SessionEnded is the Change announcing that session id ended.
func SessionEnded(id string) Change { return Change{Kind: ChangeSessionEnded, Session: id} }

// Payload is the notification payload announcing c; a Change that
// ParseChange would not read back (a session that is not a canonical
// UUID) is announced as ChangeAll.
func (c Change) Payload() string {
	switch {
	case c.Kind == ChangeSigningKeys:
		return signingKeysPayload
	case c.Kind == ChangeSessionEnded && canonicalUUID(c.Session):
		return sessionEndedPrefix + c.Session
	default:
		return ""
	}
}

// ParseChange reads a notification's payload. An empty, unknown or
// malformed one is ChangeAll: dropping every cache is always safe.
func ParseChange(payload string) Change {
	if len(payload) > maxChangePayloadSize {
		return Change{Kind: ChangeAll}
	}
	if payload == signingKeysPayload {
		return Change{Kind: ChangeSigningKeys}
	}
	if id, ok := strings.CutPrefix(payload, sessionEndedPrefix); ok && canonicalUUID(id) {
		return SessionEnded(id)
	}
	return Change{Kind: ChangeAll}
}

// canonicalUUID reports whether s is a UUID spelled as sessions' ids are
// (uuid.UUID.String): the form the caches hold them in.
func canonicalUUID(s string) bool {
	id, err := uuid.Parse(s)
	return err == nil && id.String() == s
}
