package api

import "time"

// The hub's migration API: a model migration between two controllers of a
// hub, driven by the hub (hub/internal/migration).
//
//	POST /v1/migrations                 MigrateRequest → Migration (201)
//	GET  /v1/migrations?model=&controller=&phase=&active=true   → []Migration, newest first
//	GET  /v1/migrations/{id}            → Migration
//	GET  /v1/migrations/{id}/events     → []MigrationEvent
//	POST /v1/migrations/{id}/abort      → Migration (abort requested; the driver acts on it)
//	POST /v1/migrations/{id}/retry-reap → Migration (REAPFAILED → REAP)
//
// Who may migrate a model: its administrator (or an administrator of the
// controller it is on) who may also add models on the target controller.
// The hub's model record carries the latest migration (ModelIndex.LastMigration).

// MigrateRequest starts a migration of Model (a UUID, or owner/name, or a
// name the caller owns) to TargetController (a controller name).
type MigrateRequest struct {
	Model            string `json:"model"`
	TargetController string `json:"target-controller"`
}

// Migration is one model migration as the hub reports it.
type Migration struct {
	ID               string `json:"id"`
	ModelUUID        string `json:"model-uuid"`
	ModelName        string `json:"model-name"`
	SourceController string `json:"source-controller"` // name
	TargetController string `json:"target-controller"` // name
	// Phase is the hub's phase: PRECHECK, QUIESCE, EXPORT, IMPORT,
	// VALIDATION, SUCCESS, LOGTRANSFER, REAP, DONE, ABORTING, ABORTED or
	// REAPFAILED.
	Phase          string          `json:"phase"`
	Message        string          `json:"message,omitempty"`
	Failure        string          `json:"failure,omitempty"`
	AbortRequested bool            `json:"abort-requested,omitempty"`
	Agents         MigrationAgents `json:"agents"`
	RequestedBy    string          `json:"requested-by"`
	StartedAt      time.Time       `json:"started-at"`
	UpdatedAt      time.Time       `json:"updated-at"`
	EndedAt        *time.Time      `json:"ended-at,omitempty"`
}

// MigrationAgents counts the model's agents' reports for the current
// phase; Failed names those that reported a failure, with why.
type MigrationAgents struct {
	OK      int               `json:"ok"`
	Failed  int               `json:"failed"`
	Pending int               `json:"pending"`
	Reasons map[string]string `json:"reasons,omitempty"` // agent tag → message
}

// MigrationEvent is one entry of a migration's history: a phase change,
// a step's intent or result, an abort request.
type MigrationEvent struct {
	Seq     int64     `json:"seq"`
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"` // phase, intent, result, abort
	Phase   string    `json:"phase"`
	Attempt int       `json:"attempt"`
	Detail  string    `json:"detail,omitempty"`
}

// Final reports whether the migration has ended (DONE, ABORTED or
// REAPFAILED).
func (m *Migration) Final() bool {
	return m.Phase == "DONE" || m.Phase == "ABORTED" || m.Phase == "REAPFAILED"
}
