package api

// FullStatus is the whole status of a model, shaped like
// `juju status --format json` so that scripts written for Juju keep working.
type FullStatus struct {
	Model        ModelStatus                  `json:"model"`
	Machines     map[string]MachineStatus     `json:"machines"`
	Applications map[string]ApplicationStatus `json:"applications"`
	Relations    []RelationStatus             `json:"relations,omitempty"`
	Controller   ControllerStatus             `json:"controller"`
	// Index is the raft index this status reflects.
	Index uint64 `json:"index"`
}

// ControllerStatus names the controller that answered.
type ControllerStatus struct {
	Name      string `json:"name"`
	Timestamp string `json:"timestamp"`
}

// ModelStatus is the model section.
type ModelStatus struct {
	Name       string       `json:"name"`
	UUID       string       `json:"uuid"`
	Type       string       `json:"type"`
	Controller string       `json:"controller"`
	Cloud      string       `json:"cloud"`
	Region     string       `json:"region,omitempty"`
	Version    string       `json:"version"`
	Life       Life         `json:"life,omitempty"`
	Status     StatusDetail `json:"model-status"`
}

// StatusDetail is a status as `juju status` prints it.
type StatusDetail struct {
	Current string `json:"current"`
	Message string `json:"message,omitempty"`
	Since   string `json:"since,omitempty"`
	Version string `json:"version,omitempty"`
	Life    string `json:"life,omitempty"`
}

// MachineStatus is one machine.
type MachineStatus struct {
	JujuStatus     StatusDetail `json:"juju-status"`
	Hostname       string       `json:"hostname,omitempty"`
	DNSName        string       `json:"dns-name,omitempty"`
	IPAddresses    []string     `json:"ip-addresses,omitempty"`
	InstanceID     string       `json:"instance-id"`
	MachineStatus  StatusDetail `json:"machine-status"`
	Base           *BaseStatus  `json:"base,omitempty"`
	Constraints    string       `json:"constraints,omitempty"`
	HardwareDetail string       `json:"hardware,omitempty"`
}

// BaseStatus is the OS base of a machine.
type BaseStatus struct {
	Name    string `json:"name"`
	Channel string `json:"channel"`
}

// ApplicationStatus is one application.
type ApplicationStatus struct {
	Charm string `json:"charm"`
	// Base is the OS base its units' machines run, as Juju shows an
	// application's; nil while none is known.
	Base             *BaseStatus                     `json:"base,omitempty"`
	CharmOrigin      string                          `json:"charm-origin"`
	CharmName        string                          `json:"charm-name"`
	CharmRev         int                             `json:"charm-rev"`
	CharmSHA256      string                          `json:"charm-sha256,omitempty"`
	Exposed          bool                            `json:"exposed"`
	Life             string                          `json:"life,omitempty"`
	Scale            int                             `json:"scale,omitempty"`
	ApplicationStat  StatusDetail                    `json:"application-status"`
	Relations        map[string][]RelatedApplication `json:"relations,omitempty"`
	SubordinateTo    []string                        `json:"subordinate-to,omitempty"`
	Units            map[string]UnitStatus           `json:"units,omitempty"`
	Version          string                          `json:"version,omitempty"`
	EndpointBindings map[string]string               `json:"endpoint-bindings,omitempty"`
}

// RelatedApplication is one integration of an application's endpoint, as
// juju status lists it under the application's relations, keyed by the
// endpoint: the application at the other end (itself for a peer
// relation), the interface and the endpoint's scope (global or container).
type RelatedApplication struct {
	RelatedApplication string `json:"related-application"`
	Interface          string `json:"interface"`
	Scope              string `json:"scope"`
}

// UnitStatus is one unit; subordinate units nest under their principal.
type UnitStatus struct {
	WorkloadStatus StatusDetail          `json:"workload-status"`
	JujuStatus     StatusDetail          `json:"juju-status"`
	Leader         bool                  `json:"leader,omitempty"`
	Machine        string                `json:"machine,omitempty"`
	OpenPorts      []string              `json:"open-ports,omitempty"`
	PublicAddress  string                `json:"public-address,omitempty"`
	Subordinates   map[string]UnitStatus `json:"subordinates,omitempty"`
}

// RelationStatus is one integration, as the Integration table shows it.
type RelationStatus struct {
	ID        int    `json:"relation-id"`
	Provider  string `json:"provider"`
	Requirer  string `json:"requirer"`
	Interface string `json:"interface"`
	Type      string `json:"type"` // regular, peer or subordinate
	Status    string `json:"status"`
	Message   string `json:"message,omitempty"`
}

// WatchFrame is one websocket message of a model watch. A "reset" frame
// carries a full Status; "delta" frames carry the changes after Index;
// "keepalive" frames carry only the current Index.
type WatchFrame struct {
	Type   string       `json:"type"` // reset, delta, keepalive
	Index  uint64       `json:"index"`
	Status *FullStatus  `json:"status,omitempty"`
	Deltas []WatchDelta `json:"deltas,omitempty"`
	// Mark names the controller's log entry at Index in its history, as
	// EventFrame.Mark does; a watch resumes with since=Index&mark=Mark.
	Mark string `json:"mark,omitempty"`
}

// WatchDelta is one changed entity.
type WatchDelta struct {
	Kind   string `json:"kind"` // model, application, unit, machine, relation, task, ...
	Key    string `json:"key"`
	Op     string `json:"op"` // upsert or delete
	Object any    `json:"object,omitempty"`
}

// Watch frame types.
const (
	FrameReset     = "reset"
	FrameDelta     = "delta"
	FrameKeepalive = "keepalive"
)
