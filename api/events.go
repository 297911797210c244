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
//
// Controller, the controller's version and its nodes (as GET /v1/controller
// answers them, seen from the node that streams), is in every reset frame,
// and in a "models" frame (with or without models) whenever it differs from
// the last one the stream sent: a node joined or left, leadership moved, a
// node became unreachable or reachable again. Only those changes count: a
// node's applied index and lag change with every write, and the values sent
// are those measured when the summary last changed. The stream checks every
// few seconds (leadership and reachability change no state the stream
// follows), so the hub learns of a change within that much.
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
	// Controller, when set, is the controller's version and nodes
	// (controllers that predate the field never send it).
	Controller *ControllerSummary `json:"controller,omitempty"`
}

// ControllerSummary is a controller as the hub's index keeps it: its
// version and its nodes' roles and health.
type ControllerSummary struct {
	Version string     `json:"version"`
	Nodes   []NodeInfo `json:"nodes"`
}

// SameHealth says whether a and b name the same version, nodes, addresses,
// roles and reachability, whatever the nodes' applied indexes and lags (they
// move with every write). Nodes are compared in order.
func (a *ControllerSummary) SameHealth(b *ControllerSummary) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Version != b.Version || len(a.Nodes) != len(b.Nodes) {
		return false
	}
	for i, n := range a.Nodes {
		m := b.Nodes[i]
		n.AppliedIndex, n.Lag, m.AppliedIndex, m.Lag = 0, 0, 0, 0
		if n != m {
			return false
		}
	}
	return true
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
