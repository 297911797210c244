package hookctx

import (
	"context"
	"errors"
	"time"

	"github.com/droverhq/drover/api"
)

// Errors returned by Context methods. Tools map them to Juju's user-facing
// texts; callers test them with errors.Is.
var (
	ErrRelationNotFound = errors.New("relation not found")
	ErrNotLeader        = errors.New("this unit is not the leader")
	ErrNotInAction      = errors.New("not running an action")
	// ErrNotFound is what Remote implementations wrap when the thing asked
	// for (a network binding, a bag) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrTooLarge is returned when a write exceeds one of the quotas below.
	ErrTooLarge = errors.New("too large")
)

// Quotas (CHARM-CONTRACT §3.3).
const (
	MaxRelationSettingsSize = 16 << 20 // all keys and values of one write
	MaxStateKeySize         = 256
	MaxStateValueSize       = 64 << 10
	LeaderCacheTTL          = 30 * time.Second
)

// Remote is the controller side of a hook context, implemented by the uniter
// over its API connection. Every method may block on the network; ctx bounds
// it. Nothing buffered goes through Remote: the buffered writes come back from
// Context.Flush instead.
type Remote interface {
	// ReadSettings returns one relation data bag as stored on the
	// controller: a unit's bag, or with app an application's bag. A bag
	// never written is an empty map, not an error.
	ReadSettings(ctx context.Context, relationID int, name string, app bool) (map[string]string, error)
	// IsLeader reports whether this unit leads its application. A true
	// answer must stay true for at least LeaderCacheTTL, so implementations
	// may renew the lease before answering.
	IsLeader(ctx context.Context) (bool, error)
	// UnitStatus and SetUnitStatus read and write the unit's workload status.
	UnitStatus(ctx context.Context) (api.Status, error)
	SetUnitStatus(ctx context.Context, st api.Status) error
	// ApplicationStatus and SetApplicationStatus are only called while the
	// Context believes the unit is leader; the controller checks again.
	ApplicationStatus(ctx context.Context) (ApplicationStatus, error)
	SetApplicationStatus(ctx context.Context, st api.Status) error
	// SetWorkloadVersion records application-version-set.
	SetWorkloadVersion(ctx context.Context, version string) error
	// LeaderSettings and SetLeaderSettings are Juju 3.x leader-get/leader-set.
	// In SetLeaderSettings an empty value deletes the key.
	LeaderSettings(ctx context.Context) (map[string]string, error)
	SetLeaderSettings(ctx context.Context, settings map[string]string) error
	// NetworkInfo resolves a binding (endpoint, extra-binding or "" for the
	// default space); relationID is -1 when none was given. An unknown
	// binding wraps ErrNotFound.
	NetworkInfo(ctx context.Context, binding string, relationID int) (NetworkInfo, error)
	// GoalState returns the application's goal state.
	GoalState(ctx context.Context) (GoalState, error)
	// LogAction appends an action-log message to the running task.
	LogAction(ctx context.Context, message string) error
	// ResourceGet returns the local path of the application's file
	// resource name, downloading its current content first if the unit
	// does not have it. A resource the charm has no uploaded content for
	// wraps ErrNotFound.
	ResourceGet(ctx context.Context, name string) (string, error)
}

// LogFunc receives juju-log messages: level is TRACE, DEBUG, INFO, WARNING
// or ERROR; module is "unit.<unit>.juju-log".
type LogFunc func(level, module, message string)

// HookRelation identifies the relation a relation hook runs for.
type HookRelation struct {
	ID            int
	RemoteUnit    string // empty for created, broken and app-only changed
	RemoteApp     string
	DepartingUnit string // set for -departed only
}

// Relation is one relation in the hook's context.
type Relation struct {
	ID        int
	Endpoint  string // the local endpoint name
	RemoteApp string // the local application for peer relations
	// Members are the remote units whose -joined hook has committed here.
	Members []string
	Life    api.Life
	// RemoteModelUUID is the offering model's UUID for cross-model
	// relations; empty means the local model.
	RemoteModelUUID string
}

// Action is the action being run, when the context is an action context.
type Action struct {
	Name   string
	ID     string
	Params map[string]any // validated, with schema defaults filled in
}

// ActionOutcome is what the charm reported through action-set and
// action-fail. It is recorded whatever the exit code.
type ActionOutcome struct {
	Results map[string]any
	Failed  bool
	Message string
}

// ApplicationStatus is the leader's view for status-get --application.
type ApplicationStatus struct {
	Application api.Status
	Units       map[string]api.Status
}

// Address is one address of a network interface.
type Address struct {
	Hostname string `json:"hostname" yaml:"hostname"`
	Value    string `json:"value" yaml:"value"`
	CIDR     string `json:"cidr" yaml:"cidr"`
}

// Interface is one network interface bound to a space.
type Interface struct {
	MACAddress    string    `json:"mac-address" yaml:"mac-address"`
	InterfaceName string    `json:"interface-name" yaml:"interface-name"`
	Addresses     []Address `json:"addresses" yaml:"addresses"`
}

// NetworkInfo is the answer to network-get for one binding.
type NetworkInfo struct {
	BindAddresses    []Interface `json:"bind-addresses,omitempty" yaml:"bind-addresses,omitempty"`
	EgressSubnets    []string    `json:"egress-subnets,omitempty" yaml:"egress-subnets,omitempty"`
	IngressAddresses []string    `json:"ingress-addresses,omitempty" yaml:"ingress-addresses,omitempty"`
}

// GoalStatus is one entry of goal-state.
type GoalStatus struct {
	Status string
	Since  time.Time
}

// GoalState is the goal-state of the unit's application: its units, and per
// endpoint the related applications and units.
type GoalState struct {
	Units     map[string]GoalStatus
	Relations map[string]map[string]GoalStatus
}

// RelationChanges is the net change of one relation's bags in a hook. An
// empty value deletes the key, as on the wire in Juju.
type RelationChanges struct {
	ID   int
	Unit map[string]string
	App  map[string]string
}

// Changes is everything a successful hook commits atomically (§3.4).
type Changes struct {
	Relations  []RelationChanges // sorted by ID; only relations with changes
	OpenPorts  []api.Port        // each with one endpoint, or none for all
	ClosePorts []api.Port
	// State is the complete new charm state when StateChanged.
	State        map[string]string
	StateChanged bool
}

// Empty reports whether there is nothing to commit.
func (c Changes) Empty() bool {
	return len(c.Relations) == 0 && len(c.OpenPorts) == 0 && len(c.ClosePorts) == 0 && !c.StateChanged
}
