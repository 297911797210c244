package api

import "time"

// Routes of the controller (spoke) API, all under /v1. The hub serves the
// model routes under the same paths. {model} is a model UUID; {app} an
// application name; a unit is addressed as {app}/{n}.
//
//	GET    /v1/controller                               ControllerInfo
//	POST   /v1/controller/enable-ha       EnableHARequest → ControllerInfo
//	POST   /v1/controller/join-tokens     JoinTokenRequest → JoinToken
//	PUT    /v1/controller/placement       Placement → Placement
//	       /v1/controller/migrations/...  the hub's migration driver (migration.go)
//	GET    /v1/whoami                                   WhoAmI
//	GET    /v1/charms                                   []Charm
//	POST   /v1/charms        (body: charm zip archive)  Charm
//	GET    /v1/charms/{sha256}                          Charm
//	GET    /v1/charms/{sha256}/archive                  the zip
//	GET    /v1/models                                   []Model
//	POST   /v1/models        AddModelRequest            Model
//	GET    /v1/models/{model}                           Model
//	DELETE /v1/models/{model}?force=true                Model (dying) or 204 when removed
//	GET    /v1/models/{model}/config                    map[string]any
//	PATCH  /v1/models/{model}/config  ConfigChange      map[string]any (the changed keys)
//	GET    /v1/models/{model}/status                    FullStatus
//	GET    /v1/models/{model}/watch?since=N  (websocket) WatchFrame...
//	GET    /v1/models/{model}/applications              []Application
//	POST   /v1/models/{model}/applications DeployRequest DeployResult
//	GET    /v1/models/{model}/applications/{app}        Application
//	DELETE /v1/models/{model}/applications/{app}?force=true
//	GET    /v1/models/{model}/applications/{app}/config ApplicationConfig
//	PATCH  /v1/models/{model}/applications/{app}/config ConfigChange → ApplicationConfig
//	POST   /v1/models/{model}/applications/{app}/units  AddUnitsRequest → DeployResult
//	POST   /v1/models/{model}/applications/{app}/scale  ScaleRequest → Application
//	POST   /v1/models/{model}/applications/{app}/expose ExposeRequest → Application
//	POST   /v1/models/{model}/applications/{app}/charm  SetCharmRequest → Application (refresh)
//	GET    /v1/models/{model}/constraints → ModelConstraints
//	POST   /v1/models/{model}/constraints SetModelConstraintsRequest → Model
//	POST   /v1/models/{model}/applications/{app}/constraints SetConstraintsRequest → Application
//	POST   /v1/models/{model}/applications/{app}/trust  SetTrustRequest → Application
//	GET    /v1/models/{model}/units                     []Unit
//	GET    /v1/models/{model}/units/{app}/{n}           Unit
//	DELETE /v1/models/{model}/units/{app}/{n}?force=true
//	POST   /v1/models/{model}/units/{app}/{n}/resolved  ResolvedRequest → Unit
//	GET    /v1/models/{model}/units/{app}/{n}/relation-info []UnitRelationInfo (write access)
//	GET    /v1/models/{model}/machines                  []Machine
//	POST   /v1/models/{model}/machines  AddMachinesRequest → []Machine
//	GET    /v1/models/{model}/machines/{id}             Machine
//	DELETE /v1/models/{model}/machines/{id}?force=true
//	GET    /v1/models/{model}/relations                 []Relation
//	POST   /v1/models/{model}/relations IntegrateRequest Relation
//	DELETE /v1/models/{model}/relations/{id}?force=true
//	POST   /v1/models/{model}/actions   RunActionRequest → []Task
//	GET    /v1/models/{model}/tasks?receiver=&status=   []Task
//	GET    /v1/models/{model}/tasks/{id}?wait=30s       Task (wait: until finished)
//	POST   /v1/models/{model}/tasks/{id}/cancel         Task (a pending one: cancelled)
//	GET    /v1/models/{model}/status-history?entity=&kind=&limit= []StatusHistoryEntry
//
// Reads accept ?index=N (wait until the node has applied raft index N) and
// ?consistent=true (linearizable: at least as new as every write
// acknowledged before the read began). Every response carries the
// X-Drover-Index header: the raft index the answer reflects. Errors are an
// Error body with a stable Code.

// Header names.
const (
	HeaderIndex = "X-Drover-Index"
)

// ControllerInfo describes a controller and its raft members.
type ControllerInfo struct {
	UUID    string `json:"uuid"`
	Name    string `json:"name"`
	CACert  string `json:"ca-cert"`
	Version string `json:"version"`
	// Cloud and Region: where a hub placed the controller (Placement).
	Cloud  string     `json:"cloud,omitempty"`
	Region string     `json:"region,omitempty"`
	Nodes  []NodeInfo `json:"nodes"`
	// APIAddresses are every node's API address; clients and agents keep
	// the whole list and fail over between them.
	APIAddresses []string `json:"api-addresses"`
}

// NodeInfo is one controller node as a client sees it.
type NodeInfo struct {
	ID          string `json:"id"`
	APIAddress  string `json:"api-address"`
	RaftAddress string `json:"raft-address"`
	Voter       bool   `json:"voter"`
	Leader      bool   `json:"leader"`
	// AppliedIndex is the index of the last command the node has applied
	// and Lag how far that is behind the leader's; Unreachable says the
	// node did not answer when asked (both are then unknown).
	AppliedIndex uint64 `json:"applied-index"`
	Lag          uint64 `json:"lag"`
	Unreachable  bool   `json:"unreachable,omitempty"`
}

// EnableHARequest asks a controller to grow to N voting nodes (3, 5 or 7).
type EnableHARequest struct {
	Nodes int `json:"nodes"`
}

// JoinTokenRequest asks for a token a new node joins with.
type JoinTokenRequest struct {
	TTL time.Duration `json:"ttl,omitempty"`
}

// JoinToken is a single-purpose secret for `droverd spoke --join`. ID
// names it in the controller's logs, which never show the token itself.
type JoinToken struct {
	Token   string    `json:"token"`
	Expires time.Time `json:"expires"`
	ID      string    `json:"id,omitempty"`
}

// WhoAmI is the authenticated identity.
type WhoAmI struct {
	User   string `json:"user"`
	Access string `json:"access"`
}

// AddModelRequest creates a model. Owner defaults to the caller.
type AddModelRequest struct {
	Name   string         `json:"name"`
	Owner  string         `json:"owner,omitempty"`
	Config map[string]any `json:"config,omitempty"`
	// Placement hints for a hub (a controller ignores them): the region
	// or cloud to place the model in, or one controller by name.
	Region     string `json:"region,omitempty"`
	Cloud      string `json:"cloud,omitempty"`
	Controller string `json:"controller,omitempty"`
}

// ConfigChange changes application or model config. Set holds typed values
// (JSON numbers, booleans, strings) and SetStrings user strings to be parsed
// by each option's type (as `juju config app k=v` does); an empty string in
// SetStrings resets. Reset lists keys to return to their defaults.
type ConfigChange struct {
	Set        map[string]any    `json:"set,omitempty"`
	SetStrings map[string]string `json:"set-strings,omitempty"`
	Reset      []string          `json:"reset,omitempty"`
}

// ConfigOption is one option of an application's config with its value.
type ConfigOption struct {
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	Default     any    `json:"default,omitempty"`
	Value       any    `json:"value,omitempty"`
	Source      string `json:"source"` // "default", "user" or "unset"
}

// ApplicationConfig is `juju config APP`: every option with its source.
type ApplicationConfig struct {
	Application string                  `json:"application"`
	Charm       string                  `json:"charm"`
	Settings    map[string]ConfigOption `json:"settings"`
}

// DeployRequest deploys an uploaded charm (by sha256) as an application.
type DeployRequest struct {
	Application string            `json:"application"`
	CharmSHA256 string            `json:"charm-sha256"`
	NumUnits    int               `json:"num-units"`
	Config      map[string]any    `json:"config,omitempty"`
	ConfigStrs  map[string]string `json:"config-strings,omitempty"`
	To          []string          `json:"to,omitempty"`
	Constraints string            `json:"constraints,omitempty"`
	Base        string            `json:"base,omitempty"`
	Trust       bool              `json:"trust,omitempty"`
	// Channel is the charm origin's channel (--channel), recorded as given.
	Channel string `json:"channel,omitempty"`
	// Storage is the charm's storage directives by storage name
	// (--storage NAME=POOL,SIZE,COUNT), recorded on the application.
	Storage map[string]string `json:"storage,omitempty"`
	// Resources is the uploaded content of the charm's file resources.
	Resources map[string]ResourceContent `json:"resources,omitempty"`
}

// DeployResult lists what a deploy or add-unit created.
type DeployResult struct {
	Application Application `json:"application"`
	Units       []string    `json:"units,omitempty"`
	Machines    []string    `json:"machines,omitempty"`
	Relations   []int       `json:"relations,omitempty"`
}

// AddUnitsRequest adds units to an application.
type AddUnitsRequest struct {
	NumUnits int      `json:"num-units"`
	To       []string `json:"to,omitempty"`
}

// ScaleRequest sets the number of units.
type ScaleRequest struct {
	Scale int `json:"scale"`
}

// ExposeRequest exposes or unexposes an application.
type ExposeRequest struct {
	Exposed bool `json:"exposed"`
}

// AddMachinesRequest adds empty machines (juju add-machine): NumMachines
// of them (default 1, at most 100), for deploy --to and add-unit --to.
type AddMachinesRequest struct {
	NumMachines int    `json:"num-machines,omitempty"`
	Base        string `json:"base,omitempty"`
	Constraints string `json:"constraints,omitempty"`
}

// SetTrustRequest trusts an application, or no longer (juju trust
// [--remove]).
type SetTrustRequest struct {
	Trust bool `json:"trust"`
}

// SetModelConstraintsRequest sets a model's constraints (juju
// set-model-constraints): POST /v1/models/{model}/constraints → Model.
type SetModelConstraintsRequest struct {
	Constraints string `json:"constraints"`
}

// ModelConstraints are a model's constraints: GET
// /v1/models/{model}/constraints.
type ModelConstraints struct {
	Constraints string `json:"constraints"`
}

// SetConstraintsRequest sets the constraints of an application's new
// machines (juju set-constraints), as ParseConstraints reads them.
type SetConstraintsRequest struct {
	Constraints string `json:"constraints"`
}

// SetCharmRequest upgrades an application to another uploaded charm
// (juju refresh). Settings the new charm has no option for, or whose
// value its option's type refuses, are dropped; Config and ConfigStrs
// (as DeployRequest's) are then applied.
type SetCharmRequest struct {
	CharmSHA256 string `json:"charm-sha256"`
	// Switch allows a charm of another name (juju refresh --switch).
	Switch bool `json:"switch,omitempty"`
	// ForceUnits upgrades units in error too (juju refresh --force-units).
	ForceUnits bool              `json:"force-units,omitempty"`
	Config     map[string]any    `json:"config,omitempty"`
	ConfigStrs map[string]string `json:"config-strings,omitempty"`
}

// ResolvedRequest marks a unit's failed hook resolved.
type ResolvedRequest struct {
	NoRetry bool `json:"no-retry"`
}

// IntegrateRequest relates two endpoints, each "app" or "app:endpoint".
type IntegrateRequest struct {
	Endpoints [2]string `json:"endpoints"`
}

// ExecAction is the predefined action behind `juju exec`: it runs Params
// "command" (a bash script) in the unit's hook context (on a machine: as
// the machine agent's user, in its directory), bounded by the
// optional "timeout" (a duration, such as "5m"). Its results are
// return-code, stdout and stderr. It needs admin access to the model.
const ExecAction = "juju-exec"

// RunActionRequest enqueues an action on units. A receiver is a unit name
// or "app/leader"; for ExecAction also a machine, by its tag
// ("machine-0", MachineReceiver), on which the command runs outside any
// unit's hook context.
type RunActionRequest struct {
	Receivers []string       `json:"receivers"`
	Action    string         `json:"action"`
	Params    map[string]any `json:"params,omitempty"`
}

// ModelConfigDefaults is the config every new model starts with; a key
// holding its default here shows "default" as its source in
// `model-config`, as Juju's does.
func ModelConfigDefaults() map[string]any {
	return map[string]any{
		"update-status-hook-interval": "5m",
		"automatically-retry-hooks":   true,
		"logging-config":              "<root>=INFO",
	}
}
