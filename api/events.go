package api

import "time"

// The controller's model-summary stream for the hub:
//
//	GET /v1/events?since=N[&mark=M]  (websocket, controller superuser) EventFrame...
//
// The first frame is a reset (every model's summary) unless the controller
// still holds the events after since, and since names an entry of its
// history: not past what it has applied, and, with mark (the Mark of the
// frame the consumer last applied), the entry its log holds at since (a
// controller restored from an older copy has another history); then come "models" frames with the
// summary of each model that changed (Removed: models that are gone) and
// keepalives. Summaries are whole, so a consumer that applies frames in
// order is current at Index; it resumes with since=<last Index>, and a
// reset frame replaces everything it knew about this controller.
//
// A reset frame, and a "models" frame after a node joined or left the
// controller (enable-ha), also carry APIAddresses, every node's address:
// the hub keeps them, so it reaches an HA controller through any node that
// is up, not only the one it was registered with.
const (
	EventFrameReset     = "reset"
	EventFrameModels    = "models"
	EventFrameKeepalive = "keepalive"
)

// EventFrame is one frame of /v1/events.
type EventFrame struct {
	Type    string         `json:"type"`
	Index   uint64         `json:"index"`
	Models  []ModelSummary `json:"models,omitempty"`
	Removed []string       `json:"removed,omitempty"`
	// APIAddresses, when set, are the controller's nodes' current API
	// addresses (controllers that predate the field never send them).
	APIAddresses []string `json:"api-addresses,omitempty"`
	// Mark names the controller's log entry at Index in its history (its
	// raft term and when it was appended), when its log still holds it
	// ("": unknown; controllers that predate the field never send it). A
	// consumer resumes with since=Index and mark=Mark.
	Mark string `json:"mark,omitempty"`
}

// ModelSummary is a model as the hub's index keeps it.
type ModelSummary struct {
	UUID             string `json:"uuid"`
	Name             string `json:"name"`
	Owner            string `json:"owner"`
	Life             Life   `json:"life"`
	Status           string `json:"status"`
	ApplicationCount int    `json:"application-count"`
	UnitCount        int    `json:"unit-count"`
	MachineCount     int    `json:"machine-count"`
	// CreatedAt is when the model was created on the controller (a hub
	// that adopts the model records it; absent from older controllers).
	CreatedAt time.Time `json:"created-at,omitzero"`
	// Charms are the model's applications' charms (name, revision,
	// archive hash, unit count), for the hub's compliance views (absent
	// from older controllers).
	Charms []CharmInUse `json:"charms,omitempty"`
}

// ControllerIdentity is GET /v1/internal/identity (no authentication): what
// a hub registering the controller learns before any trust exists.
type ControllerIdentity struct {
	UUID         string   `json:"uuid"`
	Name         string   `json:"name"`
	APIAddresses []string `json:"api-addresses"`
}
