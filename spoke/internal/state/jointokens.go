package state

import (
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// Node join tokens are single use: the proposer records each one's hash
// when it hands the token out (CreateJoinToken), and the command that
// admits a node consumes it (UseJoinToken), so a token admits at most one
// node whichever node of the controller is asked.
// See docs/decisions/0018-single-use-join-tokens.md.

// JoinTokenByHash returns a node join token by its hash, or nil.
func (r *reader) JoinTokenByHash(hash string) (*tables.JoinToken, error) {
	return first[tables.JoinToken](r, tables.JoinTokens, "id", hash)
}

// createJoinToken records a node join token and drops the tokens that
// expired before req.Now, used or not, so the table stays small.
func createJoinToken(t *Txn, req *CreateJoinTokenRequest) error {
	if req.Hash == "" || req.Expires.IsZero() || req.Now.IsZero() {
		return api.Errorf(api.CodeInvalid, "join token hash, expiry and time are required")
	}
	if !req.Expires.After(req.Now) {
		return api.Errorf(api.CodeInvalid, "join token expires before it is created")
	}
	all, err := list[tables.JoinToken](&t.reader, tables.JoinTokens, "id")
	if err != nil {
		return err
	}
	for _, tok := range all {
		if !req.Now.Before(tok.Expires) {
			if err := t.del(tables.JoinTokens, tok); err != nil {
				return err
			}
		}
	}
	cur, err := t.JoinTokenByHash(req.Hash)
	if err != nil {
		return err
	}
	if cur != nil {
		return api.Errorf(api.CodeAlreadyExists, "join token already recorded")
	}
	return t.put(tables.JoinTokens, &tables.JoinToken{Hash: req.Hash, Expires: req.Expires})
}

// useJoinToken consumes a node join token for req.Node: an unknown or
// expired token is unauthorized, a used one forbidden, and then nothing
// changes.
func useJoinToken(t *Txn, req *UseJoinTokenRequest) error {
	if req.Hash == "" || req.Node == "" || req.Now.IsZero() {
		return api.Errorf(api.CodeInvalid, "join token hash, node and time are required")
	}
	tok, err := t.JoinTokenByHash(req.Hash)
	if err != nil {
		return err
	}
	if err := JoinTokenUsable(tok, req.Now); err != nil {
		return err
	}
	used := *tok
	used.Used, used.Node = true, req.Node
	return t.put(tables.JoinTokens, &used)
}

// JoinTokenUsable says whether tok (nil: not recorded) may still admit a
// node at now, with the error the admission is refused with if not.
func JoinTokenUsable(tok *tables.JoinToken, now time.Time) error {
	switch {
	case tok == nil:
		return api.Errorf(api.CodeUnauthorized, "unknown join token: create one with 'drover enable-ha' or POST /v1/controller/join-tokens")
	case tok.Used:
		return api.Errorf(api.CodeForbidden, "the join token was already used: create a new one")
	case !now.Before(tok.Expires):
		return api.Errorf(api.CodeUnauthorized, "the join token expired at %s: create a new one", tok.Expires.UTC().Format(time.RFC3339))
	}
	return nil
}
