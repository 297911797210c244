package api

import (
	"strings"
	"time"
)

// Life is the lifecycle stage of a model entity, as in Juju: alive, then
// dying while it is torn down, then dead just before it is removed.
type Life string

const (
	Alive Life = "alive"
	Dying Life = "dying"
	Dead  Life = "dead"
)

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

// Controller describes the controller (spoke) as a whole.
type Controller struct {
	UUID   string `json:"uuid"`
	Name   string `json:"name"`
	CACert string `json:"ca-cert"`
	// Cloud and Region are where a hub placed the controller (set when the
	// hub registers it); empty: localhost/localhost, the local provider's.
	Cloud  string `json:"cloud,omitempty"`
	Region string `json:"region,omitempty"`
	Meta
}

// ControllerNode is one raft member of a controller.
type ControllerNode struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft-address"`
	APIAddr  string `json:"api-address"`
	Voter    bool   `json:"voter"`
	Meta
}

// User is a local user of a standalone controller.
type User struct {
	Name         string    `json:"name"`
	DisplayName  string    `json:"display-name,omitempty"`
	Access       string    `json:"access"` // "superuser" or "login"
	PasswordHash string    `json:"-"`
	CreatedAt    time.Time `json:"created-at"`
	Disabled     bool      `json:"disabled,omitempty"`
	Meta
}

// Credential is the hashed secret an agent or user authenticates with.
// Tag is "user-NAME", "unit-APP-N" or "machine-MODELUUID-N".
type Credential struct {
	Tag       string `json:"tag"`
	ModelUUID string `json:"model-uuid,omitempty"`
	Hash      string `json:"hash"`
	Meta
}

// Model is a Juju-style model: a namespace of applications.
type Model struct {
	UUID      string         `json:"uuid"`
	Name      string         `json:"name"`
	Owner     string         `json:"owner"`
	Life      Life           `json:"life"`
	Config    map[string]any `json:"config"`
	Status    Status         `json:"status"`
	CreatedAt time.Time      `json:"created-at"`
	// Sequences handed out in Apply; never reused.
	NextMachine  int `json:"next-machine"`
	NextRelation int `json:"next-relation"`
	NextTask     int `json:"next-task"`
	// Constraints are the model's machine constraints (juju
	// set-model-constraints); an application's own override them key by
	// key (MergeConstraints).
	Constraints string `json:"constraints,omitempty"`
	// Migration is set while the model takes part in a migration: on the
	// source, quiesced; on the target, being imported.
	Migration *ModelMigration `json:"migration,omitempty"`
	// ImportedBy is the migration that brought the model here, once
	// activated.
	ImportedBy string `json:"imported-by,omitempty"`
	Meta
	// Index is set on models listed by a hub (hubcompat.go).
	Index *ModelIndex `json:"-"`
}

// ModelMigration is a model's part in a migration (hub/internal/migration).
type ModelMigration struct {
	ID string `json:"id"`
	// Role is MigrationSource or MigrationTarget.
	Role  string    `json:"role"`
	Since time.Time `json:"since"`
	// Phase is where a source model's agents are in the minion protocol:
	// MigrationQuiesce, MigrationValidation or MigrationSuccess.
	Phase string `json:"phase,omitempty"`
	// Target is where a source model goes, from MigrationValidation on.
	Target *TargetController `json:"target,omitempty"`
	// Minions are a source model's agents' latest reports, by agent tag.
	Minions map[string]MinionReport `json:"minions,omitempty"`
}

// Importing reports whether the model is being imported by a migration:
// a controller hides it from its users, its event stream and its agents
// until the migration activates it.
func (m *Model) Importing() bool {
	return m != nil && m.Migration != nil && m.Migration.Role == MigrationTarget
}

// A model's roles in a migration.
const (
	// MigrationSource: the model is quiesced; only its agents' writes
	// (the hooks running when it was quiesced finishing) are accepted.
	MigrationSource = "source"
	// MigrationTarget: the model is being imported; nothing but the
	// migration touches it.
	MigrationTarget = "target"
)

// Endpoint is a charm relation endpoint.
type Endpoint struct {
	Name      string `json:"name"`
	Role      string `json:"role"` // provider, requirer or peer
	Interface string `json:"interface"`
	Scope     string `json:"scope"` // global or container
	Limit     int    `json:"limit,omitempty"`
	Optional  bool   `json:"optional,omitempty"`
}

// Endpoint roles.
const (
	RoleProvider = "provider"
	RoleRequirer = "requirer"
	RolePeer     = "peer"
)

// Charm is an uploaded charm archive, content-addressed by sha256.
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
	ModelUUID     string `json:"model-uuid"`
	Name          string `json:"name"`
	CharmSHA256   string `json:"charm-sha256"`
	CharmName     string `json:"charm-name"`
	CharmRevision int    `json:"charm-revision"` // bumped on every charm change
	// ForceCharmUpgrade: the last charm change was forced (refresh
	// --force-units): units in error take it without being resolved.
	ForceCharmUpgrade bool           `json:"force-charm-upgrade,omitempty"`
	Subordinate       bool           `json:"subordinate"`
	Endpoints         []Endpoint     `json:"endpoints"`
	Config            map[string]any `json:"config"` // user-set values only; typed
	Constraints       string         `json:"constraints,omitempty"`
	Exposed           bool           `json:"exposed"`
	// Trust: the application's units may read the model's cloud
	// credential (juju trust).
	Trust bool `json:"trust,omitempty"`
	// Base and Channel are the charm origin the deploy gave (--base,
	// --channel); Storage the storage directives by storage name.
	Base    string            `json:"base,omitempty"`
	Channel string            `json:"channel,omitempty"`
	Storage map[string]string `json:"storage,omitempty"`
	// CharmModifiedVersion moves when the charm's resources change: the
	// units run upgrade-charm for it as for a new charm (Juju's
	// charm-modified-version).
	CharmModifiedVersion int    `json:"charm-modified-version,omitempty"`
	Scale                int    `json:"scale"`
	Life                 Life   `json:"life"`
	Status               Status `json:"status"`
	WorkloadVersion      string `json:"workload-version,omitempty"`
	NextUnit             int    `json:"next-unit"`
	Meta
}

// Port is an opened port range, as open-port takes it.
type Port struct {
	Protocol  string   `json:"protocol"` // tcp, udp or icmp
	From      int      `json:"from,omitempty"`
	To        int      `json:"to,omitempty"`
	Endpoints []string `json:"endpoints,omitempty"` // empty means all
}

// Unit is one instance of an application.
type Unit struct {
	ModelUUID       string `json:"model-uuid"`
	Name            string `json:"name"` // app/N
	Application     string `json:"application"`
	MachineID       string `json:"machine,omitempty"`
	Principal       string `json:"principal,omitempty"` // set for subordinate units
	Life            Life   `json:"life"`
	WorkloadStatus  Status `json:"workload-status"`
	AgentStatus     Status `json:"agent-status"`
	WorkloadVersion string `json:"workload-version,omitempty"`
	OpenPorts       []Port `json:"open-ports,omitempty"`
	// Resolved is "", "retry" or "no-retry": a pending `resolved` request.
	Resolved string `json:"resolved,omitempty"`
	// RetryVersion is bumped by every `resolved` so agents see repeats.
	RetryVersion int `json:"retry-version,omitempty"`
	Meta
}

// Machine is a host (or local directory + process) that runs unit agents.
type Machine struct {
	ModelUUID   string   `json:"model-uuid"`
	ID          string   `json:"id"`
	ProviderID  string   `json:"provider-id,omitempty"`
	Addresses   []string `json:"addresses,omitempty"`
	Base        string   `json:"base,omitempty"`
	Constraints string   `json:"constraints,omitempty"`
	// Area is where the machine lives on a host shared by controllers:
	// the local substrate's machine directory (an absolute path), which
	// the controller that serves the machine supervises in place, as a
	// model migrates between two controllers of one host.
	Area string `json:"area,omitempty"`
	Life Life   `json:"life"`
	// AgentStatus is the machine agent's status; InstanceStatus the provider's.
	AgentStatus    Status `json:"agent-status"`
	InstanceStatus Status `json:"instance-status"`
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
	Key       string             `json:"key"` // "app:ep app2:ep2", sorted; "app:ep" for peers
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
	Owner      string            `json:"owner"` // unit name, or application name when App
	App        bool              `json:"app"`
	Settings   map[string]string `json:"settings"`
	Version    int               `json:"version"` // bumped on every effective change
	Meta
}

// UnitRelationInfo is one relation of a unit as `show-unit` shows it (GET
// .../units/{app}/{n}/relation-info): the data bags the unit's hooks read
// and write in it.
type UnitRelationInfo struct {
	RelationID      int    `json:"relation-id"`
	Endpoint        string `json:"endpoint"`
	RelatedEndpoint string `json:"related-endpoint"`
	// ApplicationData is the related application's bag (the unit's own
	// application's for a peer relation).
	ApplicationData map[string]string `json:"application-data"`
	LocalUnit       UnitRelationData  `json:"local-unit"`
	// RelatedUnits are the other side's units in the relation's scope.
	RelatedUnits map[string]UnitRelationData `json:"related-units,omitempty"`
}

// UnitRelationData is one unit's bag in a relation, and whether the unit
// is in the relation's scope.
type UnitRelationData struct {
	InScope bool              `json:"in-scope"`
	Data    map[string]string `json:"data"`
}

// Lease is the leadership lease of an application.
type Lease struct {
	ModelUUID   string    `json:"model-uuid"`
	Application string    `json:"application"`
	Holder      string    `json:"holder"`
	Start       time.Time `json:"start"`
	Expiry      time.Time `json:"expiry"`
	// Term counts leadership changes; leader-elected fires when it changes.
	Term int `json:"term"`
	Meta
}

// Task states, as Juju names them.
const (
	TaskPending   = "pending"
	TaskRunning   = "running"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
	TaskAborted   = "aborted"
)

// TaskLog is one action-log message.
type TaskLog struct {
	Time    time.Time `json:"time"`
	Message string    `json:"message"`
}

// Task is one action run on one unit, or juju-exec on one machine.
// Operation groups the tasks one run request enqueued, as Juju's
// operations do: the first task's ID, which the first task itself leaves
// empty (OperationID).
type Task struct {
	ModelUUID string `json:"model-uuid"`
	ID        string `json:"id"`
	// Receiver is a unit name ("kv/0"), or a machine's tag ("machine-0",
	// MachineReceiver) for a command run on the machine itself.
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

// machineReceiverPrefix starts a task receiver that names a machine.
const machineReceiverPrefix = "machine-"

// MachineReceiver is the task receiver naming machine id: its Juju tag,
// "machine-<id>". The replicated store holds it, so it never changes.
func MachineReceiver(id string) string { return machineReceiverPrefix + id }

// ReceiverMachine is the machine ID a task receiver names, and whether it
// names one (a unit's name never starts with "machine-": it holds a "/").
func ReceiverMachine(receiver string) (string, bool) {
	id, ok := strings.CutPrefix(receiver, machineReceiverPrefix)
	return id, ok && id != "" && !strings.Contains(receiver, "/")
}

// OperationID is the operation t belongs to: the ID of the first task
// its run request enqueued.
func (t *Task) OperationID() string {
	if t.Operation == "" {
		return t.ID
	}
	return t.Operation
}

// Status history kinds.
const (
	StatusKindWorkload    = "workload"
	StatusKindAgent       = "juju-unit"
	StatusKindApplication = "application"
	StatusKindMachine     = "machine"
	StatusKindInstance    = "machine-instance"
	StatusKindModel       = "model"
)

// StatusHistoryEntry is one recorded status of an entity.
type StatusHistoryEntry struct {
	ModelUUID string `json:"model-uuid"`
	Entity    string `json:"entity"` // unit, application or machine name
	Kind      string `json:"kind"`
	Seq       uint64 `json:"seq"` // the raft index that recorded it
	Status    Status `json:"status"`
}
