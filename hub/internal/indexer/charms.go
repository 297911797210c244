package indexer

import (
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/store"
)

// charmsOf is a summary's charms as the index keeps them: never nil, so
// that a summary without any (no application, or a controller that does
// not send them) clears those the index held.
func charmsOf(cs []api.CharmInUse) []store.Charm {
	out := make([]store.Charm, len(cs))
	for i, c := range cs {
		out[i] = store.Charm{Application: c.Application, Charm: c.Charm, Revision: c.Revision, SHA256: c.SHA256, Units: c.Units}
	}
	return out
}
