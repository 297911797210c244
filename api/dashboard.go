package api

import (
	"encoding/json"
	"time"
)

// The hub's routes behind the dashboard (docs/dashboard.md, docs/hub.md):
//
//	GET /v1/watch?since=N            websocket: FederationFrame...
//	GET /v1/access?object=TYPE:ID    Access: what the caller may do on one object
//	GET /v1/audit/export?format=csv|json&<the filters of GET /v1/audit>
//	GET /v1/audit/activity?since=T&until=T&bucket=hour|day[&org=O]  Activity
//	GET /v1/compliance/charms[?org=O]                           CharmInventory
//	GET /v1/compliance/access[?org=O][&format=csv|json]         AccessReview
//
// GET /v1/whoami also answers Capabilities under "can".

// Frames of the hub's federation stream (GET /v1/watch). The stream
// carries the index: every registered controller and every model the
// caller may read, as GET /v1/controllers and GET /v1/models answer them.
// Index is the hub's index version: every write to a controller or model
// row of the index takes a new one from one sequence, and so does every
// removal. A client resumes with since=<the last Index it applied>; the
// hub answers with a delta of what changed after it, or with a reset
// (the whole index the caller may read) when the removals after since
// have been pruned or since is ahead of the index. A grant or revoke
// sends the rows the caller may now read and removes those it may not.
// Keepalives go out after 30 s of silence, with the current index.
const (
	FederationFrameReset     = "reset"
	FederationFrameDelta     = "delta"
	FederationFrameKeepalive = "keepalive"
)

// FederationFrame is one frame of GET /v1/watch.
type FederationFrame struct {
	Type  string `json:"type"`
	Index int64  `json:"index"`
	// Controllers and Models are whole rows: in a reset every one the
	// caller may read, in a delta those written after the previous
	// frame's index (each replaces the row with its key).
	Controllers []json.RawMessage `json:"controllers,omitempty"`
	Models      []json.RawMessage `json:"models,omitempty"`
	// Removed names rows gone after the previous frame's index (or no
	// longer readable by the caller).
	Removed []FederationKey `json:"removed,omitempty"`
}

// FederationKey names one row of the federation stream: Kind is
// "controller" (ID its name) or "model" (ID its UUID).
type FederationKey struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// Capabilities is what the caller may do on the hub as a whole: the
// dashboard shows what the caller may use and hides the rest (the hub
// still checks every call).
type Capabilities struct {
	// Superuser: administrator of the hub.
	Superuser bool `json:"superuser"`
	// AuditViewer: audit_viewer on the hub or on any organization,
	// controller or model (the audit view and the compliance overview).
	AuditViewer bool `json:"audit-viewer"`
	// AdminOrgs are the organizations the caller administers (access
	// management, members, service accounts).
	AdminOrgs []string `json:"admin-orgs"`
	// AddModel: the caller may add a model on some controller.
	AddModel bool `json:"add-model"`
}

// Access is GET /v1/access: the caller's relations on one object
// ("model:UUID", "controller:NAME-or-UUID", "organization:NAME", "hub").
type Access struct {
	Object string `json:"object"`
	Read   bool   `json:"read"`
	Write  bool   `json:"write"`
	Admin  bool   `json:"admin"`
}

// Activity is GET /v1/audit/activity: audited operations counted by time
// bucket, operation family (the operation's first word: "deploy",
// "login", "grant") and result, within what the caller may read of the
// audit log.
type Activity struct {
	Bucket string           `json:"bucket"`
	Since  time.Time        `json:"since"`
	Until  time.Time        `json:"until"`
	Series []ActivityBucket `json:"series"`
}

// ActivityBucket is one count of Activity.
type ActivityBucket struct {
	Start     time.Time `json:"start"`
	Operation string    `json:"operation"`
	Result    string    `json:"result"`
	Count     int64     `json:"count"`
}

// CharmInUse is one application's charm as a model's summary carries it
// to the hub's index (ModelSummary.Charms).
type CharmInUse struct {
	Application string `json:"application"`
	Charm       string `json:"charm"`
	Revision    int    `json:"revision"`
	SHA256      string `json:"sha256"`
	Units       int    `json:"units"`
}

// CharmInventory is GET /v1/compliance/charms: which charms run where,
// across every controller, from the hub's index (no call to any
// controller).
type CharmInventory struct {
	Charms []CharmPlacement `json:"charms"`
}

// CharmPlacement is one application of CharmInventory.
type CharmPlacement struct {
	Org            string `json:"org"`
	Controller     string `json:"controller"`
	ControllerUUID string `json:"controller-uuid"`
	Region         string `json:"region"`
	ModelUUID      string `json:"model-uuid"`
	Model          string `json:"model"`
	CharmInUse
}

// AccessReview is GET /v1/compliance/access: every grant on the hub, its
// organizations, controllers, models and groups that the caller may
// review (administrators of the hub: all; of an organization: its own).
type AccessReview struct {
	Grants []ReviewedGrant `json:"grants"`
}

// ReviewedGrant is one grant of AccessReview. Subject is "user:ID" or
// "group:ID#member"; Relation the OpenFGA relation ("administrator",
// "writer", "reader", "audit_viewer", "member", ...); Object "TYPE:ID".
type ReviewedGrant struct {
	Subject     string    `json:"subject"`
	SubjectName string    `json:"subject-name"`
	Relation    string    `json:"relation"`
	Object      string    `json:"object"`
	ObjectName  string    `json:"object-name"`
	Org         string    `json:"org"`
	Since       time.Time `json:"since"`
}
