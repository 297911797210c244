package api

import "time"

// The hub's signing keys (GET and POST /v1/hub/signing-keys, the hub's
// administrators): they sign the hub's sessions and the tokens controllers
// accept from it.

// SigningKey describes one of the hub's signing keys that is still
// accepted.
type SigningKey struct {
	KID       string     `json:"kid"`
	Current   bool       `json:"current"`
	CreatedAt time.Time  `json:"created-at"`
	RetiredAt *time.Time `json:"retired-at,omitempty"`
	// AcceptedUntil is when what a retired key signed stops being
	// accepted.
	AcceptedUntil *time.Time `json:"accepted-until,omitempty"`
	// SealedWith is the public id of the key-encryption secret that seals
	// the key in the hub's database; empty for a key stored plain.
	SealedWith string `json:"sealed-with,omitempty"`
}

// RotateSigningKeyRequest is POST /v1/hub/signing-keys. With
// RevokePrevious every other key is deleted at once, rather than accepted
// until what it signed has expired.
type RotateSigningKeyRequest struct {
	RevokePrevious bool `json:"revoke-previous"`
}

// RotateSigningKeyResult names the new current key and the revoked ones.
type RotateSigningKeyResult struct {
	Current string   `json:"current"`
	Revoked []string `json:"revoked"`
}
