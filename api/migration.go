package api

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
