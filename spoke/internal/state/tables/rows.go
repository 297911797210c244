package tables

import (
	"time"

	"github.com/droverhq/drover/api"
)

// The rows of the tables that hold no api type: what package tables keeps
// beside the api objects.

// UnitCharmState is the charm state of one unit (state-get/state-set). It
// stays out of status and event streams; its unit's agent reads it.
type UnitCharmState struct {
	ModelUUID string            `json:"model-uuid"`
	Unit      string            `json:"unit"`
	State     map[string]string `json:"state"`
	api.Meta
}

// AppLeaderSettings are an application's leader settings (leader-get/set).
// Version moves on every effective change; only the lease holder writes.
type AppLeaderSettings struct {
	ModelUUID   string            `json:"model-uuid"`
	Application string            `json:"application"`
	Settings    map[string]string `json:"settings"`
	Version     int               `json:"version"`
	api.Meta
}

// HubTrustRecord is the controller's hub trust: the hub it trusts (Trust,
// nil when none) and, per node, a digest of the --hub-* start flags that
// node last applied, so that restarting a node with unchanged flags does
// not undo a change made at runtime (docs/decisions/0006-hub-trust.md).
type HubTrustRecord struct {
	Key         string            `json:"key"`
	Trust       *api.HubTrust     `json:"trust,omitempty"`
	FlagDigests map[string]string `json:"flag-digests,omitempty"`
	api.Meta
}

// HubToken is a hub join token, stored by the SHA-256 of its text. It is
// consumed (Used) by the command that makes the controller trust a hub,
// and dropped once expired.
type HubToken struct {
	Hash    string    `json:"hash"`
	Expires time.Time `json:"expires"`
	Used    bool      `json:"used,omitempty"`
	api.Meta
}

// JoinToken is a node join token, stored by the SHA-256 of its text. It is
// consumed (Used, naming the Node it admitted) by the command that admits
// a node, and dropped once expired.
type JoinToken struct {
	Hash    string    `json:"hash"`
	Expires time.Time `json:"expires"`
	Used    bool      `json:"used,omitempty"`
	Node    string    `json:"node,omitempty"`
	api.Meta
}

// Tombstone is what the controller keeps of a model that migrated away:
// its name, the migration and the controller it went to, and when it was
// reaped. Client requests and agents that name the model are redirected
// to Target.
type Tombstone struct {
	ModelUUID   string               `json:"model-uuid"`
	ModelName   string               `json:"model-name"`
	Owner       string               `json:"owner"`
	MigrationID string               `json:"migration-id"`
	Target      api.TargetController `json:"target"`
	Time        time.Time            `json:"time"`
	// Agents are the model's agent credentials (tag → secret hash) when
	// it was reaped: an agent that was away through the migration proves
	// who it is with them before it is told where the model went.
	Agents map[string]string `json:"agents,omitempty"`
	api.Meta
}

// Meta returns the raft indexes of a stored object, nil for a row that
// has none (the index table's and the status revisions').
func Meta(obj any) *api.Meta {
	switch o := obj.(type) {
	case *api.Controller:
		return &o.Meta
	case *api.ControllerNode:
		return &o.Meta
	case *api.User:
		return &o.Meta
	case *api.Credential:
		return &o.Meta
	case *api.Model:
		return &o.Meta
	case *api.Charm:
		return &o.Meta
	case *api.Application:
		return &o.Meta
	case *api.Unit:
		return &o.Meta
	case *api.Machine:
		return &o.Meta
	case *api.Relation:
		return &o.Meta
	case *api.RelationScope:
		return &o.Meta
	case *api.RelationData:
		return &o.Meta
	case *api.Lease:
		return &o.Meta
	case *api.Task:
		return &o.Meta
	case *ModelConfigEntry:
		return &o.Meta
	case *UnitCharmState:
		return &o.Meta
	case *AppLeaderSettings:
		return &o.Meta
	case *HubTrustRecord:
		return &o.Meta
	case *HubToken:
		return &o.Meta
	case *JoinToken:
		return &o.Meta
	case *api.Resource:
		return &o.Meta
	case *Tombstone:
		return &o.Meta
	}
	return nil
}
