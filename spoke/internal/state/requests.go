package state

import (
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/format"
)

// The requests of the raft commands. Their JSON bodies are declared in
// package format, whose doc comments say what each command does. A request
// of plain values is its format struct under an alias; a request that
// carries api structs is declared here with them, so proposers hand over
// api values, and is converted to its format struct in Encode and back in
// Decode (the converters below).
type (
	CreateHubTokenRequest        = format.CreateHubTokenRequest
	CreateJoinTokenRequest       = format.CreateJoinTokenRequest
	UseJoinTokenRequest          = format.UseJoinTokenRequest
	RemoveHubTrustRequest        = format.RemoveHubTrustRequest
	SetPlacementRequest          = format.SetPlacementRequest
	ControllerInitRequest        = format.ControllerInitRequest
	RemoveControllerNodeRequest  = format.RemoveControllerNodeRequest
	RemoveUserRequest            = format.RemoveUserRequest
	RemoveCredentialRequest      = format.RemoveCredentialRequest
	AddModelRequest              = format.AddModelRequest
	SetModelConfigRequest        = format.SetModelConfigRequest
	DestroyModelRequest          = format.DestroyModelRequest
	RemoveModelRequest           = format.RemoveModelRequest
	AddApplicationRequest        = format.AddApplicationRequest
	SetApplicationConfigRequest  = format.SetApplicationConfigRequest
	SetCharmRequest              = format.SetCharmRequest
	SetTrustRequest              = format.SetTrustRequest
	AttachResourcesRequest       = format.AttachResourcesRequest
	ResourceUpload               = format.ResourceUpload
	SetExposedRequest            = format.SetExposedRequest
	SetConstraintsRequest        = format.SetConstraintsRequest
	SetModelConstraintsRequest   = format.SetModelConstraintsRequest
	QuiesceModelRequest          = format.QuiesceModelRequest
	ReleaseModelRequest          = format.ReleaseModelRequest
	ImportModelRequest           = format.ImportModelRequest
	ActivateModelRequest         = format.ActivateModelRequest
	AbortImportRequest           = format.AbortImportRequest
	ReapModelRequest             = format.ReapModelRequest
	AddUnitsRequest              = format.AddUnitsRequest
	ScaleApplicationRequest      = format.ScaleApplicationRequest
	DestroyUnitsRequest          = format.DestroyUnitsRequest
	EnsureUnitDeadRequest        = format.EnsureUnitDeadRequest
	RemoveUnitRequest            = format.RemoveUnitRequest
	DestroyApplicationRequest    = format.DestroyApplicationRequest
	AddRelationRequest           = format.AddRelationRequest
	DestroyRelationRequest       = format.DestroyRelationRequest
	EnterScopeRequest            = format.EnterScopeRequest
	LeaveScopeRequest            = format.LeaveScopeRequest
	SetRelationDataRequest       = format.SetRelationDataRequest
	ClaimLeaseRequest            = format.ClaimLeaseRequest
	RevokeLeaseRequest           = format.RevokeLeaseRequest
	ExpireLeasesRequest          = format.ExpireLeasesRequest
	EnqueueTaskRequest           = format.EnqueueTaskRequest
	StartTaskRequest             = format.StartTaskRequest
	AppendTaskLogRequest         = format.AppendTaskLogRequest
	FinishTaskRequest            = format.FinishTaskRequest
	CancelTaskRequest            = format.CancelTaskRequest
	SetWorkloadVersionRequest    = format.SetWorkloadVersionRequest
	SetResolvedRequest           = format.SetResolvedRequest
	ClearResolvedRequest         = format.ClearResolvedRequest
	AddMachineRequest            = format.AddMachineRequest
	SetMachineProvisionedRequest = format.SetMachineProvisionedRequest
	DestroyMachineRequest        = format.DestroyMachineRequest
	RemoveMachineRequest         = format.RemoveMachineRequest
)

// UpsertControllerNodeRequest adds or updates a raft member. Value: *api.ControllerNode.
type UpsertControllerNodeRequest struct {
	Node api.ControllerNode `json:"node"`
}

// UpsertUserRequest adds or updates a local user. api.User hides its
// PasswordHash from JSON, so the hash travels beside it; an empty
// PasswordHash on update keeps the stored one. Value: *api.User.
type UpsertUserRequest struct {
	User         api.User `json:"user"`
	PasswordHash string   `json:"password-hash,omitempty"`
}

// SetCredentialRequest sets an agent's or user's hashed secret. Value: *api.Credential.
type SetCredentialRequest struct {
	Credential api.Credential `json:"credential"`
}

// AddCharmRequest stores charm metadata; idempotent by SHA256. Value: *api.Charm.
type AddCharmRequest struct {
	Charm api.Charm `json:"charm"`
}

// SetHubTrustRequest makes the controller trust a hub (Trust.SetAt is
// taken from Now). TokenHash, if set, names the hub join token consumed by
// the same command; FlagsNode and FlagsDigest, if set, say that a node's
// start flags propose it (see setHubTrust). Value: *api.HubTrust.
type SetHubTrustRequest struct {
	Trust       api.HubTrust `json:"trust"`
	TokenHash   string       `json:"token-hash,omitempty"`
	FlagsNode   string       `json:"flags-node,omitempty"`
	FlagsDigest string       `json:"flags-digest,omitempty"`
	Now         time.Time    `json:"now"`
}

// SetStatusRequest sets one status (Kind is an api.StatusKind*) of a unit,
// application, machine or the model (Entity = model UUID) and records it in
// the status history, bounded to HistoryLimit entries per (entity, kind).
//
// Leader, when set (only with Kind application), makes the command apply
// only while that unit holds the application's unexpired lease at Now: an
// agent sets application status as the leader, checked atomically.
type SetStatusRequest struct {
	ModelUUID string     `json:"model-uuid"`
	Kind      string     `json:"kind"`
	Entity    string     `json:"entity"`
	Status    api.Status `json:"status"`
	Leader    string     `json:"leader,omitempty"`
	Now       time.Time  `json:"now,omitzero"`
}

// SetUnitPortsRequest opens and closes port ranges of a unit. Value: *api.Unit.
type SetUnitPortsRequest struct {
	ModelUUID string     `json:"model-uuid"`
	Unit      string     `json:"unit"`
	Open      []api.Port `json:"open,omitempty"`
	Close     []api.Port `json:"close,omitempty"`
}

// CommitHookChangesRequest commits the buffered writes of one successful
// hook of Changes.Unit, all or nothing: relation bags (as SetRelationData,
// app bags only while the unit holds the unexpired lease at Now), ports (as
// SetUnitPorts), the unit's charm state, and the application's leader
// settings (lease holder only).
type CommitHookChangesRequest struct {
	ModelUUID string               `json:"model-uuid"`
	Changes   api.AgentHookChanges `json:"changes"`
	Now       time.Time            `json:"now"`
}

// SetMigrationPhaseRequest moves a source model's migration to Phase
// (format.SetMigrationPhaseRequest says how).
type SetMigrationPhaseRequest struct {
	ModelUUID   string                `json:"model-uuid"`
	MigrationID string                `json:"migration-id"`
	Phase       string                `json:"phase"`
	Target      *api.TargetController `json:"target,omitempty"`
}

// ReportMinionRequest stores an agent's report on its model's migration
// under Tag, the agent's credential tag (see format.ReportMinionRequest).
type ReportMinionRequest struct {
	ModelUUID string           `json:"model-uuid"`
	Tag       string           `json:"tag"`
	Report    api.MinionReport `json:"report"`
}

// AddApplicationResult is the Value of AddApplication and AddUnits.
type AddApplicationResult struct {
	Application *api.Application `json:"application"`
	Units       []string         `json:"units,omitempty"`
	Machines    []string         `json:"machines,omitempty"` // newly created only
	Relations   []int            `json:"relations,omitempty"`
}

// Converters between the requests above and their format structs.

func (r *UpsertControllerNodeRequest) wire() *format.UpsertControllerNodeRequest {
	return &format.UpsertControllerNodeRequest{Node: *format.FromControllerNode(&r.Node)}
}

func upsertControllerNodeRequest(w *format.UpsertControllerNodeRequest) *UpsertControllerNodeRequest {
	return &UpsertControllerNodeRequest{Node: *w.Node.API()}
}

func (r *UpsertUserRequest) wire() *format.UpsertUserRequest {
	return &format.UpsertUserRequest{User: *format.FromUser(&r.User), PasswordHash: r.PasswordHash}
}

func upsertUserRequest(w *format.UpsertUserRequest) *UpsertUserRequest {
	return &UpsertUserRequest{User: *w.User.API(""), PasswordHash: w.PasswordHash}
}

func (r *SetCredentialRequest) wire() *format.SetCredentialRequest {
	return &format.SetCredentialRequest{Credential: *format.FromCredential(&r.Credential)}
}

func setCredentialRequest(w *format.SetCredentialRequest) *SetCredentialRequest {
	return &SetCredentialRequest{Credential: *w.Credential.API()}
}

func (r *AddCharmRequest) wire() *format.AddCharmRequest {
	return &format.AddCharmRequest{Charm: *format.FromCharm(&r.Charm)}
}

func addCharmRequest(w *format.AddCharmRequest) *AddCharmRequest {
	return &AddCharmRequest{Charm: *w.Charm.API()}
}

func (r *SetHubTrustRequest) wire() *format.SetHubTrustRequest {
	return &format.SetHubTrustRequest{Trust: *format.FromHubTrust(&r.Trust), TokenHash: r.TokenHash,
		FlagsNode: r.FlagsNode, FlagsDigest: r.FlagsDigest, Now: r.Now}
}

func setHubTrustRequest(w *format.SetHubTrustRequest) *SetHubTrustRequest {
	return &SetHubTrustRequest{Trust: *w.Trust.API(), TokenHash: w.TokenHash,
		FlagsNode: w.FlagsNode, FlagsDigest: w.FlagsDigest, Now: w.Now}
}

func (r *SetStatusRequest) wire() *format.SetStatusRequest {
	return &format.SetStatusRequest{ModelUUID: r.ModelUUID, Kind: r.Kind, Entity: r.Entity,
		Status: format.FromStatus(r.Status), Leader: r.Leader, Now: r.Now}
}

func setStatusRequest(w *format.SetStatusRequest) *SetStatusRequest {
	return &SetStatusRequest{ModelUUID: w.ModelUUID, Kind: w.Kind, Entity: w.Entity,
		Status: w.Status.API(), Leader: w.Leader, Now: w.Now}
}

func (r *SetUnitPortsRequest) wire() *format.SetUnitPortsRequest {
	return &format.SetUnitPortsRequest{ModelUUID: r.ModelUUID, Unit: r.Unit,
		Open: format.FromPorts(r.Open), Close: format.FromPorts(r.Close)}
}

func setUnitPortsRequest(w *format.SetUnitPortsRequest) *SetUnitPortsRequest {
	return &SetUnitPortsRequest{ModelUUID: w.ModelUUID, Unit: w.Unit,
		Open: format.APIPorts(w.Open), Close: format.APIPorts(w.Close)}
}

func (r *CommitHookChangesRequest) wire() *format.CommitHookChangesRequest {
	return &format.CommitHookChangesRequest{ModelUUID: r.ModelUUID, Changes: format.FromHookChanges(r.Changes), Now: r.Now}
}

func commitHookChangesRequest(w *format.CommitHookChangesRequest) *CommitHookChangesRequest {
	return &CommitHookChangesRequest{ModelUUID: w.ModelUUID, Changes: w.Changes.API(), Now: w.Now}
}

func (r *SetMigrationPhaseRequest) wire() *format.SetMigrationPhaseRequest {
	return &format.SetMigrationPhaseRequest{ModelUUID: r.ModelUUID, MigrationID: r.MigrationID, Phase: r.Phase,
		Target: (*format.TargetController)(r.Target)}
}

func setMigrationPhaseRequest(w *format.SetMigrationPhaseRequest) *SetMigrationPhaseRequest {
	return &SetMigrationPhaseRequest{ModelUUID: w.ModelUUID, MigrationID: w.MigrationID, Phase: w.Phase,
		Target: (*api.TargetController)(w.Target)}
}

func (r *ReportMinionRequest) wire() *format.ReportMinionRequest {
	return &format.ReportMinionRequest{ModelUUID: r.ModelUUID, Tag: r.Tag, Report: format.MinionReport(r.Report)}
}

func reportMinionRequest(w *format.ReportMinionRequest) *ReportMinionRequest {
	return &ReportMinionRequest{ModelUUID: w.ModelUUID, Tag: w.Tag, Report: api.MinionReport(w.Report)}
}
