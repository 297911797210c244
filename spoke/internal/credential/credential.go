// Package credential checks the secrets users and machine agents present
// against their replicated hashes: in constant time, and once more after
// a consistent read when the local replica does not know the name yet.
package credential

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
)

// Reader waits for the local replica to catch up (the controller node).
type Reader interface {
	WaitRead(ctx context.Context, minIndex uint64, consistent bool) (uint64, error)
}

// SecretMatches compares secret with a stored "sha256:HEX" hash in constant
// time. It runs on every request, so it allocates nothing.
func SecretMatches(secret, hash string) bool {
	const prefix = "sha256:"
	sum := sha256.Sum256([]byte(secret))
	var want [len(prefix) + 2*sha256.Size]byte
	copy(want[:], prefix)
	hex.Encode(want[len(prefix):], sum[:])
	if len(hash) != len(want) {
		return false
	}
	// subtle.ConstantTimeCompare wants []byte, and converting hash would
	// allocate: the same comparison, every byte, whatever differs.
	var diff byte
	for i := range want {
		diff |= want[i] ^ hash[i]
	}
	return subtle.ConstantTimeByteEq(diff, 0) == 1
}

// Check runs check (ok, found, err) against the local replica
// and, when the credential is not found there, once more after a
// consistent read: a node that joined recently, or lags, may not yet have
// applied a user or agent credential the leader has (the admin user, a new
// machine's secret). A wrong secret for a known name is refused at once,
// so guessing costs no raft round trip.
func Check(ctx context.Context, r Reader, check func() (bool, bool, error)) (bool, error) {
	ok, found, err := check()
	if err != nil || ok || found {
		return ok, err
	}
	if _, werr := r.WaitRead(ctx, 0, true); werr != nil {
		return false, nil
	}
	ok, _, err = check()
	return ok, err
}
