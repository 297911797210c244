package uniter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// OpKind is the kind of the current operation.
type OpKind string

// Operation kinds.
const (
	OpNone      OpKind = ""
	OpRunHook   OpKind = "run-hook"
	OpRunAction OpKind = "run-action"
	OpResign    OpKind = "resign-leadership" // no hook: drop the local leader flag
	OpLeave     OpKind = "leave-scope"       // no hook: leave a relation's scope
	OpUnitDead  OpKind = "unit-dead"         // no hook: tell the controller teardown is done
)

// Step is how far an operation got: Queued (decided, nothing done),
// Pending (prepared; its side effects may have started) or Done (executed
// and its changes committed to the controller; only local bookkeeping is
// left).
type Step string

// Steps.
const (
	Queued  Step = "queued"
	Pending Step = "pending"
	Done    Step = "done"
)

// Hook kinds that are not relation hooks are their own names; relation hook
// kinds are the suffix after "<endpoint>-".
const (
	HookInstall          = "install"
	HookStart            = "start"
	HookConfigChanged    = "config-changed"
	HookUpgradeCharm     = "upgrade-charm"
	HookStop             = "stop"
	HookRemove           = "remove"
	HookLeaderElected    = "leader-elected"
	HookLeaderSettings   = "leader-settings-changed"
	HookUpdateStatus     = "update-status"
	HookRelationCreated  = "relation-created"
	HookRelationJoined   = "relation-joined"
	HookRelationChanged  = "relation-changed"
	HookRelationDeparted = "relation-departed"
	HookRelationBroken   = "relation-broken"
)

// HookInfo identifies one hook run.
type HookInfo struct {
	Kind          string `json:"kind"`
	RelationID    int    `json:"relation-id,omitempty"`
	Endpoint      string `json:"endpoint,omitempty"`
	RemoteUnit    string `json:"remote-unit,omitempty"`
	RemoteApp     string `json:"remote-app,omitempty"`
	DepartingUnit string `json:"departing-unit,omitempty"`
	// Version is what the hook brings the local state to: the member's or
	// the app bag's change version, the leader-settings version, the
	// config hash, or the charm sha with the charm-modified-version.
	Version int    `json:"version,omitempty"`
	Hash    string `json:"hash,omitempty"`
	// BootID is set on the start hook run because the machine rebooted:
	// the boot it acknowledges.
	BootID string `json:"boot-id,omitempty"`
}

// IsRelation reports whether h is a relation hook.
func (h HookInfo) IsRelation() bool { return strings.HasPrefix(h.Kind, "relation-") }

// Name is the full hook name, e.g. "db-relation-changed".
func (h HookInfo) Name() string {
	if h.IsRelation() {
		return h.Endpoint + "-" + h.Kind
	}
	return h.Kind
}

// Operation is the current operation.
type Operation struct {
	Kind       OpKind    `json:"kind,omitempty"`
	Step       Step      `json:"step,omitempty"`
	Hook       *HookInfo `json:"hook,omitempty"`
	TaskID     string    `json:"task-id,omitempty"`
	RelationID int       `json:"relation-id,omitempty"` // OpLeave
	// Failed is set when the hook failed (or the agent died while it ran):
	// the unit is in error until a retry succeeds or it is resolved.
	Failed    bool      `json:"failed,omitempty"`
	Attempts  int       `json:"attempts,omitempty"`
	NextRetry time.Time `json:"next-retry,omitzero"`
	// Resume is the hook operation an action ran in front of (a failed
	// hook, or one the contract queued): it is the current operation again
	// once the action is done, as Juju's runAction commits back to the
	// interrupted hook. An action must not make a unit forget its error or
	// skip the start that follows config-changed.
	Resume *Operation `json:"resume,omitempty"`
}

// afterAction is the operation once the action op is done: the hook it
// ran in front of, or none.
func (op Operation) afterAction() Operation {
	if op.Resume != nil {
		return *op.Resume
	}
	return Operation{}
}

// RelationLocal is what the unit has committed about one relation.
type RelationLocal struct {
	ID        int    `json:"id"`
	Endpoint  string `json:"endpoint"`
	RemoteApp string `json:"remote-app"`
	Peer      bool   `json:"peer,omitempty"`
	Joined    bool   `json:"joined,omitempty"` // entered scope
	Created   bool   `json:"created,omitempty"`
	// Members are the remote units whose -joined committed, with the bag
	// version last seen by a hook.
	Members        map[string]int `json:"members"`
	AppVersion     int            `json:"app-version,omitempty"`
	ChangedPending string         `json:"changed-pending,omitempty"`
}

// Local is the unit's persisted operation state.
type Local struct {
	Installed bool `json:"installed,omitempty"`
	Started   bool `json:"started,omitempty"`
	Stopped   bool `json:"stopped,omitempty"`
	Removed   bool `json:"removed,omitempty"`
	// BootID is the machine boot the unit last saw (reboot detection).
	BootID   string `json:"boot-id,omitempty"`
	CharmSHA string `json:"charm-sha,omitempty"` // the charm installed or upgraded to
	// CharmModified is the charm-modified-version installed or upgraded
	// to (it moves with the application's resources).
	CharmModified int `json:"charm-modified,omitempty"`
	// DeployedSHA is the charm on disk (it runs ahead of CharmSHA while an
	// upgrade is pending).
	DeployedSHA string `json:"deployed-sha,omitempty"`
	ConfigHash  string `json:"config-hash,omitempty"`
	Leader      bool   `json:"leader,omitempty"`
	// LeaderSettingsSeen is false until the first leader-settings-changed
	// (Juju runs one on every new non-leader).
	LeaderSettingsSeen    bool                   `json:"leader-settings-seen,omitempty"`
	LeaderSettingsVersion int                    `json:"leader-settings-version,omitempty"`
	Relations             map[int]*RelationLocal `json:"relations"`
	Op                    Operation              `json:"op"`
	// RetryVersion is the last `resolved` request acted on.
	RetryVersion int `json:"retry-version,omitempty"`
	// StatusSet records that the charm has set its workload status.
	StatusSet bool `json:"status-set,omitempty"`
	// CompletedTasks are the last task ids finished here (bounded), so a
	// task still listed by a lagging controller is not run twice.
	CompletedTasks []string `json:"completed-tasks,omitempty"`
}

const maxCompletedTasks = 256

func (l *Local) taskDone(id string) bool { return slices.Contains(l.CompletedTasks, id) }

func (l *Local) addCompleted(id string) {
	if l.taskDone(id) {
		return
	}
	l.CompletedTasks = append(l.CompletedTasks, id)
	if n := len(l.CompletedTasks); n > maxCompletedTasks {
		l.CompletedTasks = slices.Clone(l.CompletedTasks[n-maxCompletedTasks:])
	}
}

// Clone deep-copies l.
func (l *Local) Clone() *Local {
	data, _ := json.Marshal(l)
	var out Local
	_ = json.Unmarshal(data, &out)
	if out.Relations == nil {
		out.Relations = map[int]*RelationLocal{}
	}
	return &out
}

// StateFile persists Local atomically.
type StateFile struct{ Path string }

// Load reads the state; a missing file is a fresh unit.
func (f StateFile) Load() (*Local, error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Local{Relations: map[int]*RelationLocal{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var l Local
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("uniter: corrupt state file %s: %w", f.Path, err)
	}
	if l.Relations == nil {
		l.Relations = map[int]*RelationLocal{}
	}
	for _, r := range l.Relations {
		if r.Members == nil {
			r.Members = map[string]int{}
		}
	}
	return &l, nil
}

// Save writes the state: a temporary file, fsync, rename, fsync of the
// directory, so a crash leaves either the old or the new state.
func (f StateFile) Save(l *Local) error {
	data, err := json.MarshalIndent(l, "", " ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(f.Path, data, 0o600)
}

// WriteFileAtomic replaces path with data durably.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	return WriteFileAtomicWith(path, data, func(f *os.File) error { return f.Chmod(mode) })
}

// WriteFileAtomicWith replaces path with data durably: a new file in the
// same directory, which prepare gives its mode (and owner), synced and
// renamed over path, then the directory synced.
func WriteFileAtomicWith(path string, data []byte, prepare func(*os.File) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := prepare(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
