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
	err = Recheck(ctx, r, func() (bool, error) {
		var found bool
		ok, found, err = check()
		return ok || found, err
	})
	return ok, err
}

// Recheck calls look again at each commit a follower hears of, having
// caught up to it, until look reports done, it fails, or commitNewsWait
// has passed; on the leader, which knows every commit at once, it returns
// at once. A follower learns that an entry is committed with the leader's
// next append, so a record written through another node just before the
// request (a credential, a hub's trust) is found. The commit index is read
// before catching up, so news that arrives meanwhile is never missed.
func Recheck(ctx context.Context, r Reader, look func() (done bool, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, commitNewsWait)
	defer cancel()
	known, follower := r.HeardCommit(ctx, 0)
	for follower {
		if r.CatchUp(ctx) != nil {
			return nil
		}
		if done, err := look(); done || err != nil {
			return err
		}
		known, follower = r.HeardCommit(ctx, known)
	}
	return nil
}

// commitNewsWait bounds how long Check looks again at each commit a node
// hears of: many times the leader's commit timeout (hashicorp/raft's
// default 50 ms), after which a follower has heard of every commit made
// before the request arrived, even on a host so loaded that raft's
// goroutines run hundreds of milliseconds late (500 ms was seen to miss
// one in ten under a full test run on two cores).
const commitNewsWait = 2 * time.Second

// CaughtUp lets the local replica catch up (for at most a short while) and
// reports whether it has.
func CaughtUp(ctx context.Context, r Reader) bool {
	ctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	return r.CatchUp(ctx) == nil
}
