package state

import "github.com/droverhq/drover/spoke/internal/state/tables"

// The rows of state's own tables (beside the api objects) are declared in
// package tables, with the schema and the snapshot records; reads return
// them under these names.
type (
	UnitCharmState   = tables.UnitCharmState
	LeaderSettings   = tables.AppLeaderSettings
	ModelConfigEntry = tables.ModelConfigEntry
	HubTrustRecord   = tables.HubTrustRecord
	HubToken         = tables.HubToken
)
