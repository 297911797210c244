package hookctx

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
)

// Config is everything the uniter knows when it prepares a hook.
type Config struct {
	Unit      string // app/N
	ModelName string
	ModelUUID string
	// Hook is the full hook name, e.g. "db-relation-changed"; empty for
	// actions and juju exec.
	Hook string
	// Relation is set for relation hooks only.
	Relation *HookRelation
	// Relations are all relations in context: joined and not yet broken.
	Relations []Relation
	// Charm and Settings make the config snapshot: Settings holds the
	// user-set values, Charm the options with their defaults. Charm may be
	// nil, in which case Settings is shown as is.
	Charm    *charm.Config
	Settings charm.Settings
	Action   *Action // set for action contexts only
	// OpenedPorts are the unit's committed port ranges; Endpoints empty
	// means all endpoints.
	OpenedPorts []api.Port
	// State is the committed charm state (state-get).
	State          map[string]string
	PrivateAddress string
	PublicAddress  string
	// StorageID is the storage instance of a storage hook, e.g. "data/0".
	StorageID string

	Remote Remote
	Log    LogFunc
	Now    func() time.Time // the clock; time.Now when nil

	// CanReboot is true when the machine agent can reboot its machine
	// (juju-reboot); RebootNow, if set, is called by `juju-reboot --now`
	// to end the hook at once.
	CanReboot bool
	RebootNow func()
}

// Validate checks that the Config can build a Context.
func (c Config) Validate() error {
	switch {
	case c.Unit == "" || !strings.Contains(c.Unit, "/"):
		return fmt.Errorf("hookctx: invalid unit name %q", c.Unit)
	case c.Remote == nil:
		return errors.New("hookctx: nil Remote")
	case c.Log == nil:
		return errors.New("hookctx: nil Log")
	}
	if c.Relation != nil && !slices.ContainsFunc(c.Relations, func(r Relation) bool { return r.ID == c.Relation.ID }) {
		return fmt.Errorf("hookctx: hook relation %d is not among the relations in context", c.Relation.ID)
	}
	return nil
}

// Context is one hook's view of the world plus its buffered writes.
type Context struct {
	cfg       Config
	app       string
	now       func() time.Time
	relations map[int]*relationState
	ports     *Ports
	action    *ActionRun

	mu          sync.Mutex
	leader      bool
	leaderKnown time.Time // when leader was last asked; zero if never
	state       map[string]string
	stateDirty  bool
	statusSet   bool
	reboot      RebootRequest
}

// RebootRequest is what juju-reboot asked of the machine.
type RebootRequest int

const (
	NoReboot    RebootRequest = iota
	RebootAfter               // once the hook has succeeded
	RebootNow                 // at once: the hook is killed and runs again after the reboot
)

// New builds a Context from a validated Config. The Config's maps and slices
// are copied, so the caller may reuse them.
func New(cfg Config) (*Context, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Context{
		cfg:       cfg,
		app:       cfg.Unit[:strings.LastIndex(cfg.Unit, "/")],
		now:       cfg.Now,
		relations: make(map[int]*relationState, len(cfg.Relations)),
		state:     maps.Clone(cfg.State),
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.state == nil {
		c.state = map[string]string{}
	}
	for _, r := range cfg.Relations {
		c.relations[r.ID] = newRelationState(r, cfg)
	}
	c.ports = newPorts(cfg.OpenedPorts)
	c.action = &ActionRun{action: cfg.Action, remote: cfg.Remote}
	return c, nil
}

// ResourceGet returns the local path of the resource name's content
// (resource-get).
func (c *Context) ResourceGet(ctx context.Context, name string) (string, error) {
	return c.cfg.Remote.ResourceGet(ctx, name)
}

// Ports returns the hook's port ranges: committed, and buffered for Flush.
func (c *Context) Ports() *Ports { return c.ports }

// Action returns the action side of the context; outside an action its
// Info reports false and its writes fail with ErrNotInAction.
func (c *Context) Action() *ActionRun { return c.action }

// UnitName is the local unit, app/N.
func (c *Context) UnitName() string { return c.cfg.Unit }

// AppName is the local application.
func (c *Context) AppName() string { return c.app }

// ModelName and ModelUUID identify the model.
func (c *Context) ModelName() string { return c.cfg.ModelName }
func (c *Context) ModelUUID() string { return c.cfg.ModelUUID }

// HookName is the full hook name, empty for actions.
func (c *Context) HookName() string { return c.cfg.Hook }

// HookRelation returns the relation a relation hook runs for.
func (c *Context) HookRelation() (HookRelation, bool) {
	if c.cfg.Relation == nil {
		return HookRelation{}, false
	}
	return *c.cfg.Relation, true
}

// StorageID is the storage instance of a storage hook, or "".
func (c *Context) StorageID() string { return c.cfg.StorageID }

// Address returns the unit's private or public address.
func (c *Context) Address(public bool) string {
	if public {
		return c.cfg.PublicAddress
	}
	return c.cfg.PrivateAddress
}

// Config returns the config snapshot: every option with a non-nil value,
// or with all every option, nil included (config-get --all).
func (c *Context) Config(all bool) map[string]any {
	out := map[string]any{}
	if c.cfg.Charm == nil {
		for k, v := range c.cfg.Settings {
			if v != nil || all {
				out[k] = v
			}
		}
		return out
	}
	for name, opt := range c.cfg.Charm.Options {
		v, set := c.cfg.Settings[name]
		if !set || v == nil {
			v = opt.Default
		}
		if v != nil || all {
			out[name] = v
		}
	}
	return out
}

// IsLeader reports leadership, asking Remote at most once per
// LeaderCacheTTL.
func (c *Context) IsLeader(ctx context.Context) (bool, error) {
	c.mu.Lock()
	if !c.leaderKnown.IsZero() && c.now().Sub(c.leaderKnown) < LeaderCacheTTL {
		defer c.mu.Unlock()
		return c.leader, nil
	}
	c.mu.Unlock()
	asked := c.now()
	leader, err := c.cfg.Remote.IsLeader(ctx)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	c.leader, c.leaderKnown = leader, asked
	c.mu.Unlock()
	return leader, nil
}

func (c *Context) requireLeader(ctx context.Context) error {
	leader, err := c.IsLeader(ctx)
	if err != nil {
		return fmt.Errorf("cannot determine leadership status: %w", err)
	}
	if !leader {
		return ErrNotLeader
	}
	return nil
}

// UnitStatus reads the unit's workload status.
func (c *Context) UnitStatus(ctx context.Context) (api.Status, error) {
	return c.cfg.Remote.UnitStatus(ctx)
}

// SetUnitStatus writes the unit's workload status immediately.
func (c *Context) SetUnitStatus(ctx context.Context, st api.Status) error {
	st.Since = c.now()
	if err := c.cfg.Remote.SetUnitStatus(ctx, st); err != nil {
		return err
	}
	c.mu.Lock()
	c.statusSet = true
	c.mu.Unlock()
	return nil
}

// StatusSet reports whether the hook called status-set for the unit; the
// uniter uses it to decide on the "unknown" status after start (§7.2).
func (c *Context) StatusSet() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.statusSet
}

// ApplicationStatus reads the application status; leader only.
func (c *Context) ApplicationStatus(ctx context.Context) (ApplicationStatus, error) {
	if err := c.requireLeader(ctx); err != nil {
		return ApplicationStatus{}, err
	}
	return c.cfg.Remote.ApplicationStatus(ctx)
}

// SetApplicationStatus writes the application status immediately; leader only.
func (c *Context) SetApplicationStatus(ctx context.Context, st api.Status) error {
	if err := c.requireLeader(ctx); err != nil {
		return err
	}
	st.Since = c.now()
	return c.cfg.Remote.SetApplicationStatus(ctx, st)
}

// SetWorkloadVersion records the workload version immediately.
func (c *Context) SetWorkloadVersion(ctx context.Context, v string) error {
	return c.cfg.Remote.SetWorkloadVersion(ctx, v)
}

// LeaderSettings reads the Juju 3.x leader settings.
func (c *Context) LeaderSettings(ctx context.Context) (map[string]string, error) {
	return c.cfg.Remote.LeaderSettings(ctx)
}

// SetLeaderSettings writes leader settings immediately; leader only.
func (c *Context) SetLeaderSettings(ctx context.Context, kv map[string]string) error {
	if err := c.requireLeader(ctx); err != nil {
		return err
	}
	return c.cfg.Remote.SetLeaderSettings(ctx, kv)
}

// NetworkInfo resolves a binding; relationID is -1 for none.
func (c *Context) NetworkInfo(ctx context.Context, binding string, relationID int) (NetworkInfo, error) {
	return c.cfg.Remote.NetworkInfo(ctx, binding, relationID)
}

// GoalState returns the application's goal state.
func (c *Context) GoalState(ctx context.Context) (GoalState, error) {
	return c.cfg.Remote.GoalState(ctx)
}

// Log sends a juju-log message, prefixed "<endpoint>:<id>: " in relation
// hooks. Unknown levels become INFO.
func (c *Context) Log(level, message string) {
	switch level = strings.ToUpper(level); level {
	case "TRACE", "DEBUG", "INFO", "WARNING", "ERROR":
	case "WARN":
		level = "WARNING"
	default:
		level = "INFO"
	}
	if hr := c.cfg.Relation; hr != nil {
		if r, ok := c.relations[hr.ID]; ok {
			message = fmt.Sprintf("%s:%d: %s", r.info.Endpoint, r.info.ID, message)
		}
	}
	c.cfg.Log(level, "unit."+c.cfg.Unit+".juju-log", message)
}

// RequestReboot records juju-reboot's request (now: `--now`). It fails
// when the machine cannot be rebooted by its agent; actions may not call
// it (the tool checks).
func (c *Context) RequestReboot(now bool) error {
	if !c.cfg.CanReboot {
		return errors.New("juju-reboot is not supported on this machine")
	}
	c.mu.Lock()
	if now {
		c.reboot = RebootNow
	} else if c.reboot == NoReboot {
		c.reboot = RebootAfter
	}
	c.mu.Unlock()
	if now && c.cfg.RebootNow != nil {
		c.cfg.RebootNow()
	}
	return nil
}

// Reboot is what juju-reboot asked for during the hook.
func (c *Context) Reboot() RebootRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reboot
}
