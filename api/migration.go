package api

import (
	"encoding/json"
	"errors"
	"time"
)

// A model migration's routes on a controller, for the hub's migration
// driver alone (a controller superuser: the controller's own
// administrator or a hub superuser token). The hub does not relay them to
// its users: they are not under /v1/models/{model}. Every call carries
// HeaderIdempotencyKey, "<migration-id>/<phase>/<attempt>", whose
// migration ID must be the call's; asking again with the same key gets
// the same answer.
//
//	POST /v1/controller/migrations/{model}/quiesce       MigrationStepRequest → Model
//	POST /v1/controller/migrations/{model}/release       MigrationStepRequest → Model
//	GET  /v1/controller/migrations/{model}/export?migration=ID   the export's bytes
//	POST /v1/controller/migrations/{model}/import?migration=ID   (body: the export) → Model
//	POST /v1/controller/migrations/{model}/activate      MigrationStepRequest → Model
//	POST /v1/controller/migrations/{model}/abort-import  MigrationStepRequest → 204
//
// An export's answer carries HeaderExportSHA256 (its bytes' SHA-256, hex)
// and HeaderIndex (the raft index it reflects, as its header record does); an import names the
// SHA-256 it sends in HeaderExportSHA256 and is refused, importing
// nothing, when the bytes differ.

// Header names of the migration routes.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderExportSHA256   = "X-Drover-Export-SHA256"
)

// MigrationStepRequest names the migration a step on a controller belongs
// to.
type MigrationStepRequest struct {
	MigrationID string `json:"migration-id"`
}

// The source's side of a migration that agents follow (Model.Migration.Phase
// and MachineState.Migration.Phase): the hub's phases the minion protocol
// reacts to. Before VALIDATION a source model is in MigrationQuiesce.
const (
	// MigrationQuiesce: agents finish the hook they run, start nothing
	// new, and report once idle.
	MigrationQuiesce = "QUIESCE"
	// MigrationValidation: each agent dials Target with the credential it
	// already has (POST /v1/agent/migration/validate) and reports.
	MigrationValidation = "VALIDATION"
	// MigrationSuccess: the model is the target's. Each agent reports,
	// then persists Target's addresses and CA and reconnects there; the
	// source refuses everything else on the model with CodeRedirect.
	MigrationSuccess = "SUCCESS"
)

// TargetController is where a migrating model goes: what an agent needs to
// reach the target controller, and what a redirect names.
type TargetController struct {
	ControllerUUID string   `json:"controller-uuid"`
	ControllerName string   `json:"controller-name,omitempty"`
	Addresses      []string `json:"addresses"`
	CACert         string   `json:"ca-cert"`
}

// MinionReport is one agent's answer to a migration phase (Juju's minion
// report). An agent sends it as AgentMigrationReport; the source keeps the
// latest per agent tag in Model.Migration.Minions.
type MinionReport struct {
	MigrationID string    `json:"migration-id"`
	Phase       string    `json:"phase"`
	Success     bool      `json:"success"`
	Message     string    `json:"message,omitempty"`
	Time        time.Time `json:"time,omitzero"`
}

// AgentMigration is the part of a model's migration its agents see in
// MachineState.
type AgentMigration struct {
	ID     string            `json:"id"`
	Phase  string            `json:"phase"`
	Target *TargetController `json:"target,omitempty"`
}

// AgentMigrationReport is the agent request that sends a MinionReport
// (params; the controller sets Time). The source stores it under the
// tag the agent logged in with; it refuses it with CodeConflict when the
// model is not migrating away or the report names another migration.
const AgentMigrationReport = "migration-report"

// PathAgentValidate is the target's route an agent dials in VALIDATION:
// POST, HTTP Basic auth as the agent (tag and secret), body
// AgentValidateRequest, 204 when the credential opens the model the
// migration is importing; 401 for a bad credential, CodeConflict when the
// model is not being imported by that migration. It serves nothing else.
const PathAgentValidate = "/v1/agent/migration/validate"

// AgentValidateRequest names the migration an agent validates.
type AgentValidateRequest struct {
	MigrationID string `json:"migration-id"`
}

// MigrationPhaseRequest moves a source model's migration to Phase
// (MigrationValidation or MigrationSuccess), naming the target.
//
//	POST /v1/controller/migrations/{model}/phase   MigrationPhaseRequest → Model
type MigrationPhaseRequest struct {
	MigrationID string            `json:"migration-id"`
	Phase       string            `json:"phase"`
	Target      *TargetController `json:"target,omitempty"`
}

// MigrationPrecheckRequest asks a controller whether it can take its part
// in a migration: Role MigrationSource or MigrationTarget. A target is
// told what the source answered.
//
//	POST /v1/controller/migrations/{model}/precheck   MigrationPrecheckRequest → MigrationPrecheckResult
//
// A refusal is CodeInvalid (or CodeAlreadyExists for a name or UUID
// clash) whose message names what is wrong: the unit in error, the
// version, the clashing model.
type MigrationPrecheckRequest struct {
	MigrationID string                   `json:"migration-id"`
	Role        string                   `json:"role"` // MigrationSource or MigrationTarget
	Source      *MigrationPrecheckResult `json:"source,omitempty"`
}

// MigrationPrecheckResult describes a source model for its target.
type MigrationPrecheckResult struct {
	ModelUUID      string `json:"model-uuid"`
	ModelName      string `json:"model-name"`
	Owner          string `json:"owner"`
	ControllerUUID string `json:"controller-uuid"`
	// Version is the controller's drover version, ExportVersion the
	// description format its export is written in.
	Version       string `json:"version"`
	ExportVersion int    `json:"export-version"`
	// Machines counts the model's machines and Units its units: the
	// agents that must report.
	Machines int `json:"machines"`
	Units    int `json:"units"`
	// Agents are the tags of the machine agents that must report.
	Agents []string `json:"agents,omitempty"`
	// Hosts are the hosts the model's local machines run on (local
	// substrate); a target on another host cannot adopt them.
	Hosts []string `json:"hosts,omitempty"`
}

// More routes of the driver, under /v1/controller/migrations/{model}:
//
//	GET  .../{model}?migration=ID                 → Model (also a hidden, importing one), read consistently
//	POST .../{model}/reap        MigrationStepRequest → 204: the source drops the model, keeping a tombstone
//	GET  .../{model}/logs?migration=ID            → the model's debug-log records, newline-delimited LogRecord
//	POST .../{model}/logs?migration=ID   (body: newline-delimited LogRecord) → 204, records already held are skipped

// Blob routes, under /v1/controller/migrations/{model}: the charm
// archives and resource content the model's rows name travel beside the
// export, by SHA-256.
//
//	GET .../{model}/blobs?migration=ID            → MigrationBlobs: those this node lacks
//	GET .../{model}/blobs/{sha256}?migration=ID   → the content (one the model names)
//	PUT .../{model}/blobs/{sha256}?migration=ID   (body: the content) → 204; refused unless it hashes to {sha256}

// MigrationBlobs lists the content an imported model names that the
// target lacks.
type MigrationBlobs struct {
	Missing []string `json:"missing"`
}

// CodeRedirect's Details carry the TargetController as "target": the model
// was migrated to another controller (Juju's redirect error).
const DetailRedirectTarget = "target"

// Redirect is a CodeRedirect error naming where the model went.
func Redirect(model string, t TargetController) *Error {
	name := t.ControllerName
	if name == "" {
		name = t.ControllerUUID
	}
	return &Error{Code: CodeRedirect, Message: "model " + model + " was migrated to controller " + name,
		Details: map[string]any{DetailRedirectTarget: t}}
}

// RedirectTarget is the target a CodeRedirect error names, whether it
// travelled over the wire (Details decoded as JSON) or not.
func RedirectTarget(err error) (*TargetController, bool) {
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeRedirect || e.Details == nil {
		return nil, false
	}
	switch v := e.Details[DetailRedirectTarget].(type) {
	case TargetController:
		return &v, true
	case *TargetController:
		return v, v != nil
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		var t TargetController
		if json.Unmarshal(data, &t) != nil || t.ControllerUUID == "" {
			return nil, false
		}
		return &t, true
	}
}
