package format

import "time"

// The request structs below are the JSON bodies of the raft commands of
// package state, one per MessageType. Package state names each of them
// XRequest too: an alias where the struct holds only plain values, and a
// struct of its own with api values (and a converter at the codec edge)
// where the proposer hands it api structs.
//
// Every request carries all the IDs, timestamps and random values
// (password hashes included) its command needs: Apply reads no clock and no
// randomness. Sequences (machine ids, relation ids, unit numbers, task ids)
// are allocated inside Apply from the model's and application's counters,
// which is deterministic. "Value:" says what state.ApplyResult.Value holds.

// CreateHubTokenRequest records a hub join token by the SHA-256 (hex) of
// its text and drops tokens expired before Now.
type CreateHubTokenRequest struct {
	Hash    string    `json:"hash"`
	Expires time.Time `json:"expires"`
	Now     time.Time `json:"now"`
}

// SetHubTrustRequest makes the controller trust a hub (Trust.SetAt is
// taken from Now). TokenHash, if set, names the hub join token consumed by
// the same command; FlagsNode and FlagsDigest, if set, say that a node's
// start flags propose it (see Txn.SetHubTrust). Value: *api.HubTrust.
type SetHubTrustRequest struct {
	Trust       HubTrust  `json:"trust"`
	TokenHash   string    `json:"token-hash,omitempty"`
	FlagsNode   string    `json:"flags-node,omitempty"`
	FlagsDigest string    `json:"flags-digest,omitempty"`
	Now         time.Time `json:"now"`
}

// RemoveHubTrustRequest makes the controller trust no hub.
type RemoveHubTrustRequest struct{}

// CreateJoinTokenRequest records a node join token by the SHA-256 (hex)
// of its text and drops join tokens expired before Now.
type CreateJoinTokenRequest struct {
	Hash    string    `json:"hash"`
	Expires time.Time `json:"expires"`
	Now     time.Time `json:"now"`
}

// UseJoinTokenRequest consumes a node join token to admit the node Node:
// an unknown or expired token is unauthorized, a used one forbidden.
type UseJoinTokenRequest struct {
	Hash string    `json:"hash"`
	Node string    `json:"node"`
	Now  time.Time `json:"now"`
}

// SetPlacementRequest records the cloud and region a hub placed the
// controller in, which its status then shows. Value: *api.Controller.
type SetPlacementRequest struct {
	Cloud  string `json:"cloud"`
	Region string `json:"region"`
}

// ControllerInitRequest records the controller itself. Idempotent for the
// same UUID; a different UUID is a conflict. Value: *api.Controller.
type ControllerInitRequest struct {
	UUID   string `json:"uuid"`
	Name   string `json:"name"`
	CACert string `json:"ca-cert"`
}

// UpsertControllerNodeRequest adds or updates a raft member. Value: *api.ControllerNode.
type UpsertControllerNodeRequest struct {
	Node ControllerNode `json:"node"`
}

// RemoveControllerNodeRequest removes a raft member.
type RemoveControllerNodeRequest struct {
	ID string `json:"id"`
}

// UpsertUserRequest adds or updates a local user. api.User hides its
// PasswordHash from JSON, so the hash travels beside it; an empty
// PasswordHash on update keeps the stored one. Value: *api.User.
type UpsertUserRequest struct {
	User         User   `json:"user"`
	PasswordHash string `json:"password-hash,omitempty"`
}

// RemoveUserRequest removes a local user and its "user-NAME" credential.
type RemoveUserRequest struct {
	Name string `json:"name"`
}

// SetCredentialRequest sets an agent's or user's hashed secret. Value: *api.Credential.
type SetCredentialRequest struct {
	Credential Credential `json:"credential"`
}

// RemoveCredentialRequest removes a credential.
type RemoveCredentialRequest struct {
	Tag string `json:"tag"`
}

// AddModelRequest creates a model; (Owner, Name) is unique. Value: *api.Model.
type AddModelRequest struct {
	UUID   string         `json:"uuid"`
	Name   string         `json:"name"`
	Owner  string         `json:"owner"`
	Config map[string]any `json:"config,omitempty"`
	Now    time.Time      `json:"now"`
}

// SetModelConfigRequest sets and unsets model config keys. Value: the
// changed keys with their new values (nil for a key unset), map[string]any.
type SetModelConfigRequest struct {
	ModelUUID string         `json:"model-uuid"`
	Set       map[string]any `json:"set,omitempty"`
	Unset     []string       `json:"unset,omitempty"`
}

// DestroyModelRequest makes a model dying and cascades dying to its
// applications (and so their units and relations). Value: *api.Model.
type DestroyModelRequest struct {
	ModelUUID string    `json:"model-uuid"`
	Now       time.Time `json:"now"`
	// Force removes every application's units and every machine's at
	// once, in the same command (destroy-model --force).
	Force bool `json:"force,omitempty"`
}

// RemoveModelRequest deletes a model that is empty (no applications, units
// or machines left) or dead, with everything still attached to it.
type RemoveModelRequest struct {
	ModelUUID string `json:"model-uuid"`
}

// AddCharmRequest stores charm metadata; idempotent by SHA256. Value: *api.Charm.
type AddCharmRequest struct {
	Charm Charm `json:"charm"`
}

// AddApplicationRequest deploys a charm. Config is already validated and
// typed by the proposer. Placement[i] places unit i: "" or missing means a
// new machine; "N" or "lxd:N" machine N; "app/N" next to that unit.
// Subordinates get no units and no machines. Peer relations are created.
// Value: *AddApplicationResult.
type AddApplicationRequest struct {
	ModelUUID   string         `json:"model-uuid"`
	Name        string         `json:"name"`
	CharmSHA256 string         `json:"charm-sha256"`
	Config      map[string]any `json:"config,omitempty"`
	Constraints string         `json:"constraints,omitempty"`
	Base        string         `json:"base,omitempty"`
	NumUnits    int            `json:"num-units"`
	Placement   []string       `json:"placement,omitempty"`
	Trust       bool           `json:"trust,omitempty"`
	Now         time.Time      `json:"now"`
	// OriginBase, Channel and Storage are recorded on the application:
	// the charm origin's base and channel (Base is the base of new
	// machines), and the storage directives by name.
	OriginBase string            `json:"origin-base,omitempty"`
	Channel    string            `json:"channel,omitempty"`
	Storage    map[string]string `json:"storage,omitempty"`
	// Resources are the application's first resource revisions, already
	// checked against the charm and stored by the proposer.
	Resources []ResourceUpload `json:"resources,omitempty"`
}

// SetApplicationConfigRequest sets and unsets application config (typed by
// the proposer). Value: *api.Application.
type SetApplicationConfigRequest struct {
	ModelUUID string         `json:"model-uuid"`
	App       string         `json:"app"`
	Set       map[string]any `json:"set,omitempty"`
	Unset     []string       `json:"unset,omitempty"`
}

// SetCharmRequest upgrades an application to another stored charm: bumps
// CharmRevision and recomputes endpoints; rejected if an endpoint used by an
// existing relation would vanish. Set and Unset change the application's
// config with the charm (the API server drops settings the new charm has
// no option for); ForceUnits is recorded for the agents (a unit in error
// takes the charm without being resolved). Value: *api.Application.
type SetCharmRequest struct {
	ModelUUID   string         `json:"model-uuid"`
	App         string         `json:"app"`
	CharmSHA256 string         `json:"charm-sha256"`
	ForceUnits  bool           `json:"force-units,omitempty"`
	Set         map[string]any `json:"set,omitempty"`
	Unset       []string       `json:"unset,omitempty"`
}

// SetTrustRequest trusts an application with the model's cloud
// credential (juju trust), or no longer. Value: *api.Application.
type SetTrustRequest struct {
	ModelUUID string `json:"model-uuid"`
	App       string `json:"app"`
	Trust     bool   `json:"trust"`
}

// SetExposedRequest exposes or unexposes an application. Value: *api.Application.
type SetExposedRequest struct {
	ModelUUID string `json:"model-uuid"`
	App       string `json:"app"`
	Exposed   bool   `json:"exposed"`
}

// SetModelConstraintsRequest sets a model's constraints (normalized by
// api.ParseConstraints). Value: *api.Model.
type SetModelConstraintsRequest struct {
	ModelUUID   string `json:"model-uuid"`
	Constraints string `json:"constraints"`
}

// SetConstraintsRequest sets an application's constraints. Value: *api.Application.
type SetConstraintsRequest struct {
	ModelUUID   string `json:"model-uuid"`
	App         string `json:"app"`
	Constraints string `json:"constraints"`
}

// AddUnitsRequest adds N units (placement as in AddApplication).
// Value: *AddApplicationResult.
type AddUnitsRequest struct {
	ModelUUID string    `json:"model-uuid"`
	App       string    `json:"app"`
	N         int       `json:"n"`
	Placement []string  `json:"placement,omitempty"`
	Now       time.Time `json:"now"`
}

// ScaleApplicationRequest grows by adding units or shrinks by marking the
// highest-numbered alive units dying. Value: *AddApplicationResult.
type ScaleApplicationRequest struct {
	ModelUUID string    `json:"model-uuid"`
	App       string    `json:"app"`
	Scale     int       `json:"scale"`
	Now       time.Time `json:"now"`
}

// DestroyUnitsRequest makes units dying. With Force they are removed at once:
// they leave every scope, their data bags go, their lease is released.
type DestroyUnitsRequest struct {
	ModelUUID string   `json:"model-uuid"`
	Units     []string `json:"units"`
	Force     bool     `json:"force,omitempty"`
}

// EnsureUnitDeadRequest marks a unit dead; a Conflict while it is still in
// any relation scope.
type EnsureUnitDeadRequest struct {
	ModelUUID string `json:"model-uuid"`
	Unit      string `json:"unit"`
}

// RemoveUnitRequest deletes a dead unit with its status history and
// credential; a dying application left with no units is removed too.
type RemoveUnitRequest struct {
	ModelUUID string `json:"model-uuid"`
	Unit      string `json:"unit"`
}

// DestroyApplicationRequest makes an application, its units and its
// relations dying. Force removes its units at once. The application is
// removed once dying with no units and no relations.
type DestroyApplicationRequest struct {
	ModelUUID string `json:"model-uuid"`
	App       string `json:"app"`
	Force     bool   `json:"force,omitempty"`
}

// AddRelationRequest integrates two endpoints, each "app" or "app:endpoint",
// resolved as Juju does. Value: *api.Relation.
type AddRelationRequest struct {
	ModelUUID string    `json:"model-uuid"`
	Endpoints [2]string `json:"endpoints"`
	// Now stamps the status of subordinate units a container relation creates.
	Now time.Time `json:"now"`
}

// DestroyRelationRequest makes a relation dying, found by Endpoints when
// Endpoints[0] is set and by ID otherwise (ids start at 0). It is removed
// once no unit is in its scope.
type DestroyRelationRequest struct {
	ModelUUID string    `json:"model-uuid"`
	ID        int       `json:"id"`
	Endpoints [2]string `json:"endpoints,omitzero"`
}

// EnterScopeRequest puts a unit into a relation's scope and creates its unit
// bag (with Settings) if missing.
type EnterScopeRequest struct {
	ModelUUID  string            `json:"model-uuid"`
	RelationID int               `json:"relation-id"`
	Unit       string            `json:"unit"`
	Settings   map[string]string `json:"settings,omitempty"`
}

// LeaveScopeRequest takes a unit out of a relation's scope.
type LeaveScopeRequest struct {
	ModelUUID  string `json:"model-uuid"`
	RelationID int    `json:"relation-id"`
	Unit       string `json:"unit"`
}

// SetRelationDataRequest writes Unit's own bag, or with App its
// application's bag (only while Unit holds an unexpired lease at Now).
// Value: *api.RelationData.
type SetRelationDataRequest struct {
	ModelUUID  string            `json:"model-uuid"`
	RelationID int               `json:"relation-id"`
	Unit       string            `json:"unit"`
	App        bool              `json:"app,omitempty"`
	Set        map[string]string `json:"set,omitempty"`
	Unset      []string          `json:"unset,omitempty"`
	Now        time.Time         `json:"now"`
}

// ClaimLeaseRequest claims or extends an application's leadership for
// Duration from Now. Value: *api.Lease.
type ClaimLeaseRequest struct {
	ModelUUID string        `json:"model-uuid"`
	App       string        `json:"app"`
	Unit      string        `json:"unit"`
	Now       time.Time     `json:"now"`
	Duration  time.Duration `json:"duration"`
}

// RevokeLeaseRequest ends Holder's lease early.
type RevokeLeaseRequest struct {
	ModelUUID string `json:"model-uuid"`
	App       string `json:"app"`
	Holder    string `json:"holder"`
}

// ExpireLeasesRequest deletes every lease with Expiry <= Now. Proposed by a
// leader-only worker. Value: []string of "model-uuid/app" expired.
type ExpireLeasesRequest struct {
	Now time.Time `json:"now"`
}

// EnqueueTaskRequest queues an action on a unit (Receiver), or juju-exec
// on a machine (Machine, with Receiver empty): the task's receiver is then
// "machine-<id>", as Juju's machine tag. The ID comes from
// Model.NextTask. Params are already validated. Value: *api.Task.
type EnqueueTaskRequest struct {
	ModelUUID string `json:"model-uuid"`
	Receiver  string `json:"receiver"`
	// Machine is a machine ID; logs written before the field carry none,
	// and their Receiver names a unit as it always did.
	Machine        string         `json:"machine,omitempty"`
	Action         string         `json:"action"`
	Params         map[string]any `json:"params,omitempty"`
	Parallel       bool           `json:"parallel,omitempty"`
	ExecutionGroup string         `json:"execution-group,omitempty"`
	// Operation is the ID of the first task of the same run request; ""
	// for the first (api.Task.OperationID), so that the tasks of logs
	// written before the field replay as they were applied.
	Operation string    `json:"operation,omitempty"`
	Now       time.Time `json:"now"`
}

// StartTaskRequest moves a pending task to running. Value: *api.Task.
type StartTaskRequest struct {
	ModelUUID string    `json:"model-uuid"`
	ID        string    `json:"id"`
	Now       time.Time `json:"now"`
}

// AppendTaskLogRequest appends an action-log line to a running task.
type AppendTaskLogRequest struct {
	ModelUUID string    `json:"model-uuid"`
	ID        string    `json:"id"`
	Time      time.Time `json:"time"`
	Message   string    `json:"message"`
}

// FinishTaskRequest ends a running (or pending) task with Status completed,
// failed or aborted. Value: *api.Task.
type FinishTaskRequest struct {
	ModelUUID string         `json:"model-uuid"`
	ID        string         `json:"id"`
	Status    string         `json:"status"`
	Message   string         `json:"message,omitempty"`
	Results   map[string]any `json:"results,omitempty"`
	Now       time.Time      `json:"now"`
}

// CancelTaskRequest cancels a pending task. Value: *api.Task.
type CancelTaskRequest struct {
	ModelUUID string    `json:"model-uuid"`
	ID        string    `json:"id"`
	Now       time.Time `json:"now"`
}

// SetStatusRequest sets one status (Kind is an api.StatusKind*) of a unit,
// application, machine or the model (Entity = model UUID) and records it in
// the status history, bounded to HistoryLimit entries per (entity, kind).
//
// Leader, when set (only with Kind application), makes the command apply
// only while that unit holds the application's unexpired lease at Now: an
// agent sets application status as the leader, checked atomically.
type SetStatusRequest struct {
	ModelUUID string    `json:"model-uuid"`
	Kind      string    `json:"kind"`
	Entity    string    `json:"entity"`
	Status    Status    `json:"status"`
	Leader    string    `json:"leader,omitempty"`
	Now       time.Time `json:"now,omitzero"`
}

// SetUnitPortsRequest opens and closes port ranges of a unit. Value: *api.Unit.
type SetUnitPortsRequest struct {
	ModelUUID string `json:"model-uuid"`
	Unit      string `json:"unit"`
	Open      []Port `json:"open,omitempty"`
	Close     []Port `json:"close,omitempty"`
}

// SetWorkloadVersionRequest records a unit's workload version (and the
// application's). Value: *api.Unit.
type SetWorkloadVersionRequest struct {
	ModelUUID string `json:"model-uuid"`
	Unit      string `json:"unit"`
	Version   string `json:"version"`
}

// SetResolvedRequest asks an errored unit to retry ("retry") or skip
// ("no-retry") its failed hook; bumps RetryVersion. Value: *api.Unit.
type SetResolvedRequest struct {
	ModelUUID string `json:"model-uuid"`
	Unit      string `json:"unit"`
	Mode      string `json:"mode"`
}

// ClearResolvedRequest clears a pending resolved request. Value: *api.Unit.
type ClearResolvedRequest struct {
	ModelUUID string `json:"model-uuid"`
	Unit      string `json:"unit"`
}

// AddMachineRequest adds an empty machine; its ID comes from
// Model.NextMachine. Value: *api.Machine.
type AddMachineRequest struct {
	ModelUUID   string `json:"model-uuid"`
	Base        string `json:"base,omitempty"`
	Constraints string `json:"constraints,omitempty"`
}

// SetMachineProvisionedRequest records the provider's instance for a
// machine. Value: *api.Machine.
type SetMachineProvisionedRequest struct {
	ModelUUID  string   `json:"model-uuid"`
	ID         string   `json:"id"`
	ProviderID string   `json:"provider-id"`
	Addresses  []string `json:"addresses,omitempty"`
	// Base is the instance's OS base, kept when the machine asked for none.
	Base string `json:"base,omitempty"`
	// Area is where the instance lives on the host (api.Machine.Area);
	// empty keeps the machine's.
	Area string `json:"area,omitempty"`
}

// DestroyMachineRequest makes a machine dying; refused while units remain
// on it unless Force (which force-destroys those units).
type DestroyMachineRequest struct {
	ModelUUID string `json:"model-uuid"`
	ID        string `json:"id"`
	Force     bool   `json:"force,omitempty"`
}

// RemoveMachineRequest deletes a dying or dead machine with no units.
type RemoveMachineRequest struct {
	ModelUUID string `json:"model-uuid"`
	ID        string `json:"id"`
}

// CommitHookChangesRequest commits the buffered writes of one successful
// hook of Changes.Unit, all or nothing: relation bags (as SetRelationData,
// app bags only while the unit holds the unexpired lease at Now), ports (as
// SetUnitPorts), the unit's charm state, and the application's leader
// settings (lease holder only).
type CommitHookChangesRequest struct {
	ModelUUID string      `json:"model-uuid"`
	Changes   HookChanges `json:"changes"`
	Now       time.Time   `json:"now"`
}

// ResourceUpload is new content for one resource of an application: the
// name, type and filename the charm declares, and the stored blob.
type ResourceUpload struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// AttachResourcesRequest gives an application new resource content: each
// resource whose content changed gets the next revision, and the
// application's charm-modified-version moves once if any did, so its
// units run upgrade-charm. Value: *api.Application.
type AttachResourcesRequest struct {
	ModelUUID string           `json:"model-uuid"`
	App       string           `json:"app"`
	Resources []ResourceUpload `json:"resources"`
	Now       time.Time        `json:"now"`
}

// QuiesceModelRequest makes a model the source of migration MigrationID:
// it refuses every change but its agents' until ReleaseModel. Asking
// again for the same migration changes nothing. Value: none.
type QuiesceModelRequest struct {
	ModelUUID   string    `json:"model-uuid"`
	MigrationID string    `json:"migration-id"`
	Now         time.Time `json:"now"`
}

// ReleaseModelRequest ends a source model's quiescence for migration
// MigrationID (an abort). A model not quiesced changes nothing. Value:
// none.
type ReleaseModelRequest struct {
	ModelUUID   string `json:"model-uuid"`
	MigrationID string `json:"migration-id"`
}

// ImportModelRequest creates a model from a model export, hidden as the
// target of migration MigrationID until ActivateModel. Importing the same
// migration's model again changes nothing. Value: none.
type ImportModelRequest struct {
	MigrationID string    `json:"migration-id"`
	Export      []byte    `json:"export"`
	Now         time.Time `json:"now"`
}

// ActivateModelRequest makes an imported model the controller's own.
// Activating it again changes nothing; an import aborted meanwhile is
// gone (not found). Value: none.
type ActivateModelRequest struct {
	ModelUUID   string `json:"model-uuid"`
	MigrationID string `json:"migration-id"`
}

// ReportMinionRequest stores an agent's report on a source model's
// migration: the latest per agent Tag (its credential tag) in the model's
// Migration.Minions. A model that is not a migration's source, or whose
// migration is not Report.MigrationID, refuses it. Value: none.
type ReportMinionRequest struct {
	ModelUUID string       `json:"model-uuid"`
	Tag       string       `json:"tag"`
	Report    MinionReport `json:"report"`
}

// AbortImportRequest removes a model being imported for migration
// MigrationID, every row of it. A model already gone changes nothing; one
// activated is refused. Value: none.
type AbortImportRequest struct {
	ModelUUID   string `json:"model-uuid"`
	MigrationID string `json:"migration-id"`
}

// SetMigrationPhaseRequest moves the migration a source model is quiesced
// for to Phase: QUIESCE → VALIDATION → SUCCESS, each naming Target. The
// same phase again changes nothing; a step back or another migration is
// refused. From SUCCESS on the model answers every other command with a
// redirect to Target. Value: none.
type SetMigrationPhaseRequest struct {
	ModelUUID   string            `json:"model-uuid"`
	MigrationID string            `json:"migration-id"`
	Phase       string            `json:"phase"`
	Target      *TargetController `json:"target,omitempty"`
}

// ReapModelRequest removes every row of a source model its migration took
// to SUCCESS and keeps a Tombstone of it (Now is the tombstone's time).
// Reaping it again changes nothing. Value: none.
type ReapModelRequest struct {
	ModelUUID   string    `json:"model-uuid"`
	MigrationID string    `json:"migration-id"`
	Now         time.Time `json:"now"`
}
