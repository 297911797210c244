package format

import (
	"encoding/json"
	"time"
)

// The types below mirror the api structs of the same names, which the
// store keeps in memory; their JSON is what snapshots (and, for the values
// commands carry, raft commands) hold.

// Life is the lifecycle stage of an entity: "alive", "dying" or "dead".
type Life string

// Meta carries the raft indexes every stored object has.
type Meta struct {
	CreateIndex uint64 `json:"create-index"`
	ModifyIndex uint64 `json:"modify-index"`
}

// Status is a workload, agent, application, machine or model status.
type Status struct {
	Status  string         `json:"status"`
	Message string         `json:"message,omitempty"`
	Data    map[string]any `json:"data,omitempty"`
	Since   time.Time      `json:"since"`
}

// UnmarshalJSON decodes the numbers in Data as float64, not json.Number,
// whatever the decoder's UseNumber says: the first controllers read every
// status that way (through the api struct's own decoder), so stores built
// from existing logs and snapshots hold float64 there, and every node must
// hold the same values.
func (s *Status) UnmarshalJSON(b []byte) error {
	type plain Status
	return json.Unmarshal(b, (*plain)(s))
}

// Controller is the controller record.
type Controller struct {
	UUID   string `json:"uuid"`
	Name   string `json:"name"`
	CACert string `json:"ca-cert"`
	Cloud  string `json:"cloud,omitempty"`
	Region string `json:"region,omitempty"`
	Meta
}

// ControllerNode is one raft member.
type ControllerNode struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft-address"`
	APIAddr  string `json:"api-address"`
	Voter    bool   `json:"voter"`
	Meta
}

// User is a local user, without its password hash (UserRecord and
// UpsertUserRequest carry the hash beside it).
type User struct {
	Name        string    `json:"name"`
	DisplayName string    `json:"display-name,omitempty"`
	Access      string    `json:"access"`
	CreatedAt   time.Time `json:"created-at"`
	Disabled    bool      `json:"disabled,omitempty"`
	Meta
}

// UserRecord is the snapshot record of a user.
type UserRecord struct {
	User         *User  `json:"user"`
	PasswordHash string `json:"password-hash,omitempty"`
}

// Credential is the hashed secret an agent or user authenticates with.
type Credential struct {
	Tag       string `json:"tag"`
	ModelUUID string `json:"model-uuid,omitempty"`
	Hash      string `json:"hash"`
	Meta
}

// Model is a model record.
type Model struct {
	UUID         string         `json:"uuid"`
	Name         string         `json:"name"`
	Owner        string         `json:"owner"`
	Life         Life           `json:"life"`
	Config       map[string]any `json:"config"`
	Status       Status         `json:"status"`
	CreatedAt    time.Time      `json:"created-at"`
	NextMachine  int            `json:"next-machine"`
	NextRelation int            `json:"next-relation"`
	NextTask     int            `json:"next-task"`
	// Constraints are the model's machine constraints (juju
	// set-model-constraints); an application's own override them key by
	// key.
	Constraints string          `json:"constraints,omitempty"`
	Migration   *ModelMigration `json:"migration,omitempty"`
	ImportedBy  string          `json:"imported-by,omitempty"`
	Meta
}

// ModelMigration is a model's part in a migration.
type ModelMigration struct {
	ID      string                  `json:"id"`
	Role    string                  `json:"role"`
	Since   time.Time               `json:"since"`
	Phase   string                  `json:"phase,omitempty"`
	Target  *TargetController       `json:"target,omitempty"`
	Minions map[string]MinionReport `json:"minions,omitempty"`
}

// TargetController is where a migrating model goes.
type TargetController struct {
	ControllerUUID string   `json:"controller-uuid"`
	ControllerName string   `json:"controller-name,omitempty"`
	Addresses      []string `json:"addresses"`
	CACert         string   `json:"ca-cert"`
}

// MinionReport is an agent's answer to a migration phase.
type MinionReport struct {
	MigrationID string    `json:"migration-id"`
	Phase       string    `json:"phase"`
	Success     bool      `json:"success"`
	Message     string    `json:"message,omitempty"`
	Time        time.Time `json:"time,omitzero"`
}

// Endpoint is a charm relation endpoint.
type Endpoint struct {
	Name      string `json:"name"`
	Role      string `json:"role"`
	Interface string `json:"interface"`
	Scope     string `json:"scope"`
	Limit     int    `json:"limit,omitempty"`
	Optional  bool   `json:"optional,omitempty"`
}

// Charm is an uploaded charm's metadata.
type Charm struct {
	SHA256       string     `json:"sha256"`
	Name         string     `json:"name"`
	Size         int64      `json:"size"`
	Subordinate  bool       `json:"subordinate"`
	Endpoints    []Endpoint `json:"endpoints"`
	MetadataYAML string     `json:"metadata-yaml"`
	ConfigYAML   string     `json:"config-yaml,omitempty"`
	ActionsYAML  string     `json:"actions-yaml,omitempty"`
	Meta
}

// Application is a deployed charm.
type Application struct {
	ModelUUID            string            `json:"model-uuid"`
	Name                 string            `json:"name"`
	CharmSHA256          string            `json:"charm-sha256"`
	CharmName            string            `json:"charm-name"`
	CharmRevision        int               `json:"charm-revision"`
	ForceCharmUpgrade    bool              `json:"force-charm-upgrade,omitempty"`
	Subordinate          bool              `json:"subordinate"`
	Endpoints            []Endpoint        `json:"endpoints"`
	Config               map[string]any    `json:"config"`
	Constraints          string            `json:"constraints,omitempty"`
	Exposed              bool              `json:"exposed"`
	Trust                bool              `json:"trust,omitempty"`
	Base                 string            `json:"base,omitempty"`
	Channel              string            `json:"channel,omitempty"`
	Storage              map[string]string `json:"storage,omitempty"`
	CharmModifiedVersion int               `json:"charm-modified-version,omitempty"`
	Scale                int               `json:"scale"`
	Life                 Life              `json:"life"`
	Status               Status            `json:"status"`
	WorkloadVersion      string            `json:"workload-version,omitempty"`
	NextUnit             int               `json:"next-unit"`
	Meta
}

// Port is an opened port range.
type Port struct {
	Protocol  string   `json:"protocol"`
	From      int      `json:"from,omitempty"`
	To        int      `json:"to,omitempty"`
	Endpoints []string `json:"endpoints,omitempty"`
}

// Unit is one instance of an application.
type Unit struct {
	ModelUUID       string `json:"model-uuid"`
	Name            string `json:"name"`
	Application     string `json:"application"`
	MachineID       string `json:"machine,omitempty"`
	Principal       string `json:"principal,omitempty"`
	Life            Life   `json:"life"`
	WorkloadStatus  Status `json:"workload-status"`
	AgentStatus     Status `json:"agent-status"`
	WorkloadVersion string `json:"workload-version,omitempty"`
	OpenPorts       []Port `json:"open-ports,omitempty"`
	Resolved        string `json:"resolved,omitempty"`
	RetryVersion    int    `json:"retry-version,omitempty"`
	Meta
}

// Machine is a host that runs unit agents.
type Machine struct {
	ModelUUID      string   `json:"model-uuid"`
	ID             string   `json:"id"`
	ProviderID     string   `json:"provider-id,omitempty"`
	Addresses      []string `json:"addresses,omitempty"`
	Base           string   `json:"base,omitempty"`
	Constraints    string   `json:"constraints,omitempty"`
	Area           string   `json:"area,omitempty"`
	Life           Life     `json:"life"`
	AgentStatus    Status   `json:"agent-status"`
	InstanceStatus Status   `json:"instance-status"`
	Meta
}

// RelationEndpoint is one side of a relation.
type RelationEndpoint struct {
	Application string `json:"application"`
	Endpoint
}

// Relation is an integration between two endpoints (or one peer endpoint).
type Relation struct {
	ModelUUID string             `json:"model-uuid"`
	ID        int                `json:"id"`
	Key       string             `json:"key"`
	Endpoints []RelationEndpoint `json:"endpoints"`
	Life      Life               `json:"life"`
	Meta
}

// RelationScope records that a unit has entered a relation's scope.
type RelationScope struct {
	ModelUUID  string `json:"model-uuid"`
	RelationID int    `json:"relation-id"`
	Unit       string `json:"unit"`
	Meta
}

// RelationData is one data bag: a unit's or an application's.
type RelationData struct {
	ModelUUID  string            `json:"model-uuid"`
	RelationID int               `json:"relation-id"`
	Owner      string            `json:"owner"`
	App        bool              `json:"app"`
	Settings   map[string]string `json:"settings"`
	Version    int               `json:"version"`
	Meta
}

// Lease is the leadership lease of an application.
type Lease struct {
	ModelUUID   string    `json:"model-uuid"`
	Application string    `json:"application"`
	Holder      string    `json:"holder"`
	Start       time.Time `json:"start"`
	Expiry      time.Time `json:"expiry"`
	Term        int       `json:"term"`
	Meta
}

// TaskLog is one action-log message.
type TaskLog struct {
	Time    time.Time `json:"time"`
	Message string    `json:"message"`
}

// Task is one action run on one unit.
type Task struct {
	ModelUUID      string         `json:"model-uuid"`
	ID             string         `json:"id"`
	Receiver       string         `json:"receiver"`
	Action         string         `json:"action"`
	Params         map[string]any `json:"params"`
	Parallel       bool           `json:"parallel,omitempty"`
	ExecutionGroup string         `json:"execution-group,omitempty"`
	Operation      string         `json:"operation,omitempty"`
	Status         string         `json:"status"`
	Message        string         `json:"message,omitempty"`
	Results        map[string]any `json:"results,omitempty"`
	Log            []TaskLog      `json:"log,omitempty"`
	Enqueued       time.Time      `json:"enqueued"`
	Started        time.Time      `json:"started,omitzero"`
	Completed      time.Time      `json:"completed,omitzero"`
	Meta
}

// StatusHistoryEntry is one recorded status of an entity.
type StatusHistoryEntry struct {
	ModelUUID string `json:"model-uuid"`
	Entity    string `json:"entity"`
	Kind      string `json:"kind"`
	Seq       uint64 `json:"seq"`
	Status    Status `json:"status"`
}

// HubTrust is the hub a controller trusts.
type HubTrust struct {
	URL     string    `json:"url"`
	JWKSURL string    `json:"jwks-url,omitempty"`
	CACert  string    `json:"ca-cert,omitempty"`
	Source  string    `json:"source"`
	SetAt   time.Time `json:"set-at"`
}

// SettingsChange is a net change to one data bag.
type SettingsChange struct {
	RelationID int               `json:"relation-id"`
	App        bool              `json:"app,omitempty"`
	Set        map[string]string `json:"set,omitempty"`
	Unset      []string          `json:"unset,omitempty"`
}

// HookChanges are the buffered writes of one successful hook (the api's
// AgentHookChanges).
type HookChanges struct {
	Unit           string            `json:"unit"`
	Relations      []SettingsChange  `json:"relations,omitempty"`
	OpenPorts      []Port            `json:"open-ports,omitempty"`
	ClosePorts     []Port            `json:"close-ports,omitempty"`
	StateSet       map[string]string `json:"state-set,omitempty"`
	StateUnset     []string          `json:"state-unset,omitempty"`
	LeaderSettings *SettingsChange   `json:"leader-settings,omitempty"`
}

// The records below mirror package state's own stored types.

// IndexEntry records the last raft index that modified a table.
type IndexEntry struct {
	Key   string `json:"key"`
	Value uint64 `json:"value"`
}

// UnitState is a unit's charm state (state.UnitCharmState).
type UnitState struct {
	ModelUUID string            `json:"model-uuid"`
	Unit      string            `json:"unit"`
	State     map[string]string `json:"state"`
	Meta
}

// LeaderSettings are an application's leader settings.
type LeaderSettings struct {
	ModelUUID   string            `json:"model-uuid"`
	Application string            `json:"application"`
	Settings    map[string]string `json:"settings"`
	Version     int               `json:"version"`
	Meta
}

// ModelConfigEntry is one model config key.
type ModelConfigEntry struct {
	ModelUUID string `json:"model-uuid"`
	Key       string `json:"key"`
	Value     any    `json:"value"`
	Meta
}

// HubTrustRecord is the controller's one hub trust row.
type HubTrustRecord struct {
	Key         string            `json:"key"`
	Trust       *HubTrust         `json:"trust,omitempty"`
	FlagDigests map[string]string `json:"flag-digests,omitempty"`
	Meta
}

// HubToken is a hub join token, by the SHA-256 of its text.
type HubToken struct {
	Hash    string    `json:"hash"`
	Expires time.Time `json:"expires"`
	Used    bool      `json:"used,omitempty"`
	Meta
}

// JoinToken is a node join token, by the SHA-256 of its text; Node is the
// node it admitted.
type JoinToken struct {
	Hash    string    `json:"hash"`
	Expires time.Time `json:"expires"`
	Used    bool      `json:"used,omitempty"`
	Node    string    `json:"node,omitempty"`
	Meta
}

// Tombstone is what a controller keeps of a model that migrated away
// (ReapModel): where it went, so that a late client or agent is
// redirected there.
type Tombstone struct {
	ModelUUID   string           `json:"model-uuid"`
	ModelName   string           `json:"model-name"`
	Owner       string           `json:"owner"`
	MigrationID string           `json:"migration-id"`
	Target      TargetController `json:"target"`
	Time        time.Time        `json:"time"`
	// Agents are the model's agent credentials: tag → secret hash.
	Agents map[string]string `json:"agents,omitempty"`
	Meta
}

// Resource is an application's file resource: the uploaded content's
// hash and size, and the revision of this upload.
type Resource struct {
	ModelUUID   string    `json:"model-uuid"`
	Application string    `json:"application"`
	Name        string    `json:"name"`
	Type        string    `json:"type"`
	Path        string    `json:"path"`
	Revision    int       `json:"revision"`
	SHA256      string    `json:"sha256"`
	Size        int64     `json:"size"`
	Origin      string    `json:"origin"`
	Uploaded    time.Time `json:"uploaded"`
	Meta
}
