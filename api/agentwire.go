package api

import "time"

// The agent protocol. A machine agent holds one websocket to a controller
// node: GET /v1/agent/stream?since=N, authenticated with HTTP Basic auth
// as its credential tag ("machine-<model-uuid>-<id>") and secret. The
// controller sends AgentFrame values; the agent sends AgentRequest values
// on the same connection and gets AgentFrame{Type: "response"} back,
// matched by ID. The agent keeps every controller address (State carries
// them), fails over to another on a dropped connection, and resumes with
// since=<last index>; the controller then sends the current state (state
// frames are whole, so nothing is lost by missing intermediate ones).
//
// Migration (the minion protocol, docs/decisions/0036-minion-protocol.md).
// While the model migrates away, MachineState.Migration names the
// migration, its phase and, from VALIDATION on, the target controller.
// The agent starts no new hook, action or command while it is set (one
// running finishes and commits), and sends one AgentMigrationReport per
// phase: QUIESCE once nothing runs; VALIDATION after POST
// PathAgentValidate to the target with its own credential; SUCCESS, after
// which it persists the target's addresses and CA and reconnects there
// from since=0. A login to the source after SUCCESS is answered 409 with
// the CodeRedirect error (Redirect, RedirectTarget) in the handshake's
// body: the agent moves to the target it names.

// Agent frame types.
const (
	AgentFrameState     = "state"     // MachineState is the whole remote state
	AgentFrameResponse  = "response"  // answer to an AgentRequest
	AgentFrameKeepalive = "keepalive" // nothing changed; Index is current
)

// AgentFrame is one message from the controller to a machine agent.
type AgentFrame struct {
	Type  string        `json:"type"`
	Index uint64        `json:"index"`
	State *MachineState `json:"state,omitempty"`
	// Response fields.
	ID     uint64 `json:"id,omitempty"`
	Result any    `json:"result,omitempty"`
	Error  *Error `json:"error,omitempty"`
}

// MachineState is everything the agents of one machine need to decide
// what to run next. It is sent whole whenever any part of it changes.
type MachineState struct {
	ModelUUID string   `json:"model-uuid"`
	ModelName string   `json:"model-name"`
	Machine   string   `json:"machine"`
	Life      Life     `json:"life"`
	Addresses []string `json:"addresses,omitempty"`
	// ControllerAddresses are every controller node's API address.
	ControllerAddresses []string `json:"controller-addresses"`
	// UpdateStatusInterval and AutoRetry come from model config.
	UpdateStatusInterval time.Duration               `json:"update-status-interval"`
	AutoRetry            bool                        `json:"automatically-retry-hooks"`
	Units                map[string]*UnitRemoteState `json:"units"`
	// Tasks are the machine's own pending and running tasks (juju-exec
	// on the machine, outside any unit), oldest first.
	Tasks []TaskRef `json:"tasks,omitempty"`
	// Migration is set while the model migrates away from this
	// controller: the minion protocol (MigrationQuiesce and on).
	Migration *AgentMigration `json:"migration,omitempty"`
}

// UnitRemoteState is the controller's view of one unit (Juju's uniter
// remote state).
type UnitRemoteState struct {
	Unit         string `json:"unit"`
	Application  string `json:"application"`
	Principal    string `json:"principal,omitempty"`
	Life         Life   `json:"life"`
	Resolved     string `json:"resolved,omitempty"`
	RetryVersion int    `json:"retry-version"`
	// CharmSHA256 and CharmRevision name the charm the unit must run.
	CharmSHA256   string `json:"charm-sha256"`
	CharmRevision int    `json:"charm-revision"`
	// ForceCharmUpgrade is set when the charm was refreshed with
	// --force-units: a unit in error deploys it without waiting to be
	// resolved (and without running upgrade-charm; the failed hook stays
	// failed and is retried with the new charm).
	ForceCharmUpgrade bool `json:"force-charm-upgrade,omitempty"`
	// CharmModifiedVersion moves when the application's resources change;
	// the unit runs upgrade-charm for it (Juju's charm-modified-version).
	CharmModifiedVersion int `json:"charm-modified-version,omitempty"`
	// Resources are the application's uploaded file resources by name:
	// what resource-get downloads.
	Resources map[string]AgentResource `json:"resources,omitempty"`
	// Trust: the application is trusted (juju trust); a change runs
	// config-changed, as Juju's trust hash does.
	Trust bool `json:"trust,omitempty"`
	// Config is the effective application config: defaults overlaid with
	// user values, typed (string, int64/json number, float, bool).
	Config map[string]any `json:"config"`
	// Leadership: Leader is true while the unit holds an unexpired lease.
	Leader                bool                         `json:"leader"`
	LeaseExpiry           time.Time                    `json:"lease-expiry,omitzero"`
	LeaderSettingsVersion int                          `json:"leader-settings-version"`
	Relations             map[int]*RelationRemoteState `json:"relations"`
	// Tasks are this unit's pending or running actions, oldest first.
	Tasks     []TaskRef `json:"tasks,omitempty"`
	OpenPorts []Port    `json:"open-ports,omitempty"`
	// Status as the controller has it (for status-get).
	WorkloadStatus Status `json:"workload-status"`
}

// RelationRemoteState is one relation as a unit sees it.
type RelationRemoteState struct {
	ID        int    `json:"id"`
	Endpoint  string `json:"endpoint"` // the local endpoint name
	Interface string `json:"interface"`
	Role      string `json:"role"`
	Scope     string `json:"scope"`
	RemoteApp string `json:"remote-app"` // the local app for peers
	Life      Life   `json:"life"`
	// Joined is true once the local unit entered the relation's scope.
	Joined bool `json:"joined"`
	// Members are the remote units in scope, with their bag versions.
	Members map[string]int `json:"members"`
	// AppVersion is the remote application bag's version (0: never written).
	AppVersion int `json:"app-version"`
}

// TaskRef is an action the unit has to run.
type TaskRef struct {
	ID             string         `json:"id"`
	Action         string         `json:"action"`
	Params         map[string]any `json:"params,omitempty"`
	Parallel       bool           `json:"parallel,omitempty"`
	ExecutionGroup string         `json:"execution-group,omitempty"`
	Status         string         `json:"status"`
}

// Agent request methods.
const (
	AgentSetStatus          = "set-status"           // AgentStatusParams
	AgentSetWorkloadVersion = "set-workload-version" // {unit, version}
	AgentClaimLeader        = "claim-leader"         // AgentLeaderParams → AgentLeaderResult
	AgentEnterScope         = "enter-scope"          // AgentScopeParams
	AgentLeaveScope         = "leave-scope"          // AgentScopeParams
	AgentCommitHook         = "commit-hook"          // AgentHookChanges
	AgentReadSettings       = "read-settings"        // AgentReadParams → map[string]string
	AgentStartTask          = "start-task"           // AgentTaskParams
	AgentLogTask            = "log-task"             // AgentTaskParams (Message)
	AgentFinishTask         = "finish-task"          // AgentTaskParams (Status, Message, Results)
	AgentUnitDead           = "unit-dead"            // {unit}: teardown done; the controller removes it
	AgentGoalState          = "goal-state"           // {unit} → GoalState
	AgentStatusGet          = "status-get"           // {unit, application bool} → application status with units
	AgentLog                = "log"                  // AgentLogParams: juju-log and hook output for debug-log
	AgentCharmState         = "charm-state"          // {unit} → map[string]string (state-get)
	AgentLeaderSettings     = "leader-settings"      // {unit} → map[string]string (leader-get)
)

// AgentRequest is one call from an agent.
type AgentRequest struct {
	ID     uint64 `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// AgentStatusParams sets a unit's workload or agent status, or (leader
// only) its application's status.
type AgentStatusParams struct {
	Unit   string `json:"unit"`
	Kind   string `json:"kind"` // StatusKindWorkload, StatusKindAgent or StatusKindApplication
	Status Status `json:"status"`
}

// AgentLeaderParams claims or extends leadership for Duration.
type AgentLeaderParams struct {
	Unit     string        `json:"unit"`
	Duration time.Duration `json:"duration"`
}

// AgentLeaderResult says whether the unit leads, and until when.
type AgentLeaderResult struct {
	Leader bool      `json:"leader"`
	Holder string    `json:"holder,omitempty"`
	Expiry time.Time `json:"expiry,omitzero"`
}

// AgentScopeParams names a unit and a relation.
type AgentScopeParams struct {
	Unit       string            `json:"unit"`
	RelationID int               `json:"relation-id"`
	Settings   map[string]string `json:"settings,omitempty"`
}

// SettingsChange is a net change to one data bag.
type SettingsChange struct {
	RelationID int               `json:"relation-id"`
	App        bool              `json:"app,omitempty"`
	Set        map[string]string `json:"set,omitempty"`
	Unset      []string          `json:"unset,omitempty"`
}

// AgentHookChanges are the buffered writes of one successful hook,
// committed atomically (all or nothing).
type AgentHookChanges struct {
	Unit           string            `json:"unit"`
	Relations      []SettingsChange  `json:"relations,omitempty"`
	OpenPorts      []Port            `json:"open-ports,omitempty"`
	ClosePorts     []Port            `json:"close-ports,omitempty"`
	StateSet       map[string]string `json:"state-set,omitempty"`
	StateUnset     []string          `json:"state-unset,omitempty"`
	LeaderSettings *SettingsChange   `json:"leader-settings,omitempty"`
}

// AgentReadParams reads a remote (or own) data bag.
type AgentReadParams struct {
	Unit       string `json:"unit"` // the reader
	RelationID int    `json:"relation-id"`
	Owner      string `json:"owner"` // unit or application name
	App        bool   `json:"app,omitempty"`
}

// AgentTaskParams reports on an action task: a unit's (Unit), or the
// machine's own (Machine, the agent's machine ID, with Unit empty).
type AgentTaskParams struct {
	Unit    string         `json:"unit"`
	Machine string         `json:"machine,omitempty"`
	ID      string         `json:"id"`
	Status  string         `json:"status,omitempty"`
	Message string         `json:"message,omitempty"`
	Results map[string]any `json:"results,omitempty"`
}

// AgentLogParams carries log lines for debug-log.
type AgentLogParams struct {
	Unit    string    `json:"unit"`
	Time    time.Time `json:"time"`
	Level   string    `json:"level"`
	Module  string    `json:"module"`
	Message string    `json:"message"`
}

// GoalState is goal-state's answer.
type GoalState struct {
	Units     map[string]GoalStatus            `json:"units"`
	Relations map[string]map[string]GoalStatus `json:"relations"`
}

// GoalStatus is one entry of GoalState.
type GoalStatus struct {
	Status string `json:"status"`
	Since  string `json:"since"`
}

// AgentConfig is the file (agent.conf, JSON, mode 0600) the provisioner
// writes for a machine agent.
type AgentConfig struct {
	ModelUUID           string   `json:"model-uuid"`
	Machine             string   `json:"machine"`
	Tag                 string   `json:"tag"`
	Secret              string   `json:"secret"`
	ControllerAddresses []string `json:"controller-addresses"`
	CACert              string   `json:"ca-cert"`
	DataDir             string   `json:"data-dir"`
}

// AgentUnitParams names a unit, for the methods whose params are "{unit}":
// set-workload-version (with Version), unit-dead, goal-state, status-get
// (with Application), charm-state and leader-settings.
type AgentUnitParams struct {
	Unit        string `json:"unit"`
	Application bool   `json:"application,omitempty"`
	Version     string `json:"version,omitempty"`
}

// AgentStatusResult answers status-get: the unit's workload status, and
// with Application (leader only) the application status and every unit's
// workload status.
type AgentStatusResult struct {
	Unit        Status            `json:"unit"`
	Application *Status           `json:"application,omitempty"`
	Units       map[string]Status `json:"units,omitempty"`
}

// LogRecord is one debug-log line: GET /v1/models/{model}/logs streams
// them as newline-delimited JSON. Seq orders the records of one controller
// node; records are kept per node (see the apiserver package).
type LogRecord struct {
	Seq     uint64    `json:"seq"`
	Entity  string    `json:"entity"` // unit-app-N or machine-N
	Time    time.Time `json:"time"`
	Level   string    `json:"level"`
	Module  string    `json:"module"`
	Message string    `json:"message"`
}

// AgentResource is one uploaded file resource as a unit sees it: the
// content to download by hash (GET /v1/agent/resources/{sha256}), and the
// filename the charm gave it.
type AgentResource struct {
	Path     string `json:"path"`
	Revision int    `json:"revision"`
	SHA256   string `json:"sha256"`
	Size     int64  `json:"size"`
}
