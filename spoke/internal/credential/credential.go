// Package credential checks the secrets users, machine agents and hubs
// present, and throttles those who fail.
//
// Invariants: a check compares secrets in constant time; refusing a
// credential touches no raft (no read index, no barrier, no log entry) on
// a node that has registered itself, whoever sends it, so a stranger costs
// the cluster nothing but the local lookup (Reader.CatchUp; ADR 0019);
// failed checks are charged to the source address and to the claimed name
// in token buckets of bounded size (Limiter).
package credential

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"time"
)

// Reader lets the local replica catch up with what this node knows is
// committed, without a message or a log entry (propose.Proposer.CatchUp).
type Reader interface {
	CatchUp(ctx context.Context) error
	// HeardCommit waits until the node knows of a newer commit index
	// than known, or ctx ends, and returns the newest it knows; heard
	// says whether it is newer (never on the leader, which knows every
	// commit at once; propose.Proposer.HeardCommit).
	HeardCommit(ctx context.Context, known uint64) (commit uint64, heard bool)
}

// catchUpWait bounds how long a check waits for the local replica.
const catchUpWait = 2 * time.Second

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

// Check runs check (ok, found, err) against the local replica and, when
// the credential is not found there and the replica lags behind what this
// node knows is committed, once more after catching up: a node that
// joined recently, or lags, may not yet have applied a user or agent
// credential the leader has (the admin user, a new machine's secret).
// A wrong secret for a known name is refused at once. Neither costs a
// raft round trip: on a follower an unknown name is looked up again at
// each commit the node hears of (HeardCommit: the leader's next appends),
// for a bounded time, so a credential written through another node just
// before is found; then it is refused on what this node knows.
func Check(ctx context.Context, r Reader, check func() (bool, bool, error)) (bool, error) {
	ok, found, err := check()
	if err != nil || ok || found {
		return ok, err
	}
	if !CaughtUp(ctx, r) {
		return false, nil
	}
	if ok, found, err = check(); err != nil || ok || found {
		return ok, err
	}
	// The node may not yet know that the entry with the credential is
	// committed: it hears so with the leader's next appends. Catch up to
	// each commit it hears of and look again, for at most commitNewsWait.
	// The commit index is read before catching up, so news that arrives
	// while the replica catches up or is read is never missed.
	cctx, cancel := context.WithTimeout(ctx, commitNewsWait)
	defer cancel()
	known, follower := r.HeardCommit(cctx, 0)
	for follower {
		if r.CatchUp(cctx) != nil {
			return false, nil
		}
		if ok, found, err = check(); err != nil || ok || found {
			return ok, err
		}
		known, follower = r.HeardCommit(cctx, known)
	}
	return false, nil
}

// commitNewsWait bounds how long Check looks again at each commit a node
// hears of: several times the leader's commit timeout (hashicorp/raft's
// default 50 ms), after which a follower has heard of every commit made
// before the request arrived.
const commitNewsWait = 500 * time.Millisecond

// CaughtUp lets the local replica catch up (for at most a short while) and
// reports whether it has.
func CaughtUp(ctx context.Context, r Reader) bool {
	ctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	return r.CatchUp(ctx) == nil
}
