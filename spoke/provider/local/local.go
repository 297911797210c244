// Package local is the local substrate: a machine is a directory on the
// controller's host plus a supervised drover-agent process.
//
// The Provisioner is a leader-only worker. For every alive machine without
// a provider ID it creates <Dir>/<model-uuid>/<id>/, generates a secret,
// stores its hash as the machine's credential, writes agent.conf (mode
// 0600), starts `drover-agent machine --config <dir>/agent.conf` in its own
// process group and records the PID in agent.pid, then marks the machine
// provisioned ("local:<hostname>:<id>", 127.0.0.1) with the directory as
// its Area.
//
// A machine lives in its Area wherever that is (place.go): a model that
// migrated here from another controller of this host keeps its machines in
// that controller's Dir, where this provisioner supervises their agents in
// place, and the source leaves them alone once the migration reached
// SUCCESS (handover.go). No agent or workload is stopped or moved by a
// migration. The provisioner keeps <Dir>/<model>/<id> as a link to the
// area of each machine it adopted that way, so that powering off or
// destroying the machines under its Dir (KillProcessesUnder,
// DestroyMachines) reaches them (adopted.go).
//
// A controller running as root runs each machine's agent, and so all charm
// code of the machine, as the machine's own system user, which owns the
// machine's directory and agent.conf and can reach nothing else of the
// controller's (users.go, area.go). Otherwise machines run as the
// controller's user (shared mode), which is reported at start and in each
// machine's instance status.
//
// Invariants:
//   - Agents outlive the provisioner: a spoke restart or a leadership change
//     to another node sharing Dir re-adopts a running agent (agent.pid names
//     a live process whose /proc/<pid>/cmdline carries this agent.conf) and
//     starts it again otherwise.
//   - Only processes it started are signalled: a PID is signalled only when
//     its command line names the machine's agent.conf (and, as root, it runs
//     as the machine's user); tearing a machine down as root ends every
//     process of the machine's user, and deletes the user.
//   - A crashed agent is restarted with exponential backoff (reset after it
//     has run for a minute).
//   - A dying or dead machine with no units has its agent stopped (SIGTERM,
//     SIGKILL after StopGrace), its directory deleted, and is removed from
//     the model. Directories of machines the store does not hold are torn
//     down too, but those of a model handed over to another controller;
//     a link to an adopted machine's area whose machine is gone is
//     removed, its target left alone.
//   - A model's machines are supervised by one controller at a time: a
//     model being imported is left to the source, a source's model that
//     reached SUCCESS to the target.
//   - Every step is idempotent, so a crash between steps is repaired by the
//     next round: a machine without provider ID is provisioned afresh
//     (stopping any agent an earlier attempt left behind).
package local

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/stream"
)

// Config holds the provisioner's dependencies.
type Config struct {
	Store  *state.Store
	Events *stream.Broker
	// Propose replicates a command through raft.
	Propose func(ctx context.Context, t state.MessageType, req any) (any, uint64, error)
	// Dir holds one directory per machine: <Dir>/<model-uuid>/<id>. As
	// root, every directory from / to Dir must be root-owned, searchable
	// by others and not writable by them (DefaultDir is).
	Dir string
	// ControllerUUID names the machines' users (UserName); default Dir.
	ControllerUUID string
	// AgentBinary is the drover-agent executable.
	AgentBinary string
	// CACert is the controller CA (PEM) agents verify the API with.
	CACert []byte
	Logger *slog.Logger
	Now    func() time.Time
	// Hostname names the host in provider IDs; default os.Hostname().
	Hostname string
	// Base is the OS base machines report ("debian@12"); default the
	// host's, from /etc/os-release.
	Base string
	// Interval is the longest pause between two reconciliations (default 1s);
	// store events wake it earlier.
	Interval time.Duration
	// StopGrace is how long a stopped agent gets between SIGTERM and SIGKILL
	// (default 10s).
	StopGrace time.Duration
}

// Provisioner runs machines as local agent processes.
type Provisioner struct {
	cfg      Config
	isolated bool                    // machines run as their own users (root)
	procs    map[string]*proc        // by "<model>/<id>"
	users    map[string]*machineUser // by "<model>/<id>", as root
	warned   bool                    // the missing agent binary was reported
}

// proc is what the provisioner knows of one machine's agent.
type proc struct {
	pid      int
	started  time.Time
	failures int
	next     time.Time // earliest restart after a crash
}

// New validates cfg.
func New(cfg Config) (*Provisioner, error) {
	if cfg.Store == nil || cfg.Events == nil || cfg.Propose == nil || cfg.Logger == nil {
		return nil, errors.New("local: Store, Events, Propose and Logger are required")
	}
	if cfg.Dir == "" || cfg.AgentBinary == "" {
		return nil, errors.New("local: Dir and AgentBinary are required")
	}
	// Machines record their directory (Area) as an absolute path, and an
	// agent is known by the agent.conf path on its command line.
	abs, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = abs
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, err
		}
		cfg.Hostname = h
	}
	if cfg.Base == "" {
		cfg.Base = hostBase("/etc/os-release")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	if cfg.ControllerUUID == "" {
		cfg.ControllerUUID = cfg.Dir
	}
	p := &Provisioner{cfg: cfg, isolated: os.Geteuid() == 0, procs: map[string]*proc{}, users: map[string]*machineUser{}}
	if !p.isolated {
		cfg.Logger.Warn("SECURITY: the controller does not run as root, so local machines run as its own user: "+
			"any charm deployed here can read the controller's data directory (CA key, cluster secret, raft data) "+
			"and every machine's agent.conf; run the controller as root to give each machine a user of its own",
			"uid", os.Geteuid(), "dir", cfg.Dir)
		return p, nil
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := checkReachable(cfg.Dir); err != nil {
		return nil, fmt.Errorf("local: machine directory %s cannot be used: machines run as their own users, "+
			"and %w; choose a --machine-dir whose parents are root-owned, searchable and not writable by others "+
			"(the default, %s/..., is)", cfg.Dir, err, machineRoot)
	}
	// The directory is made again with the first machine (ensureArea): a
	// controller that never provisions one, or is killed before it stops,
	// leaves nothing on the host.
	p.removeEmptyDirs()
	return p, nil
}

// Tag is a machine agent's credential tag.
func Tag(model, id string) string { return "machine-" + model + "-" + id }

// HashSecret is the stored form of an agent secret (as spoke.HashSecret).
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Run reconciles until ctx ends. Agents keep running after it returns;
// the directories they are not in go with it (removeEmptyDirs).
func (p *Provisioner) Run(ctx context.Context) error {
	defer p.removeEmptyDirs()
	for {
		idx, err := p.cfg.Store.Snapshot().LatestIndex()
		if err != nil {
			return err
		}
		sub, err := p.cfg.Events.Subscribe(ctx, stream.SubscribeRequest{Since: idx})
		if err != nil {
			return nil
		}
		for {
			if err := p.reconcile(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			// Reconcile again when a machine or model changes (or on the
			// interval, to restart crashed agents); other writes, such as
			// config or relation data, never concern the provisioner.
			err := p.waitRelevant(ctx, sub)
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, stream.ErrSubscriptionReset) {
				break
			}
		}
	}
}

func (p *Provisioner) waitRelevant(ctx context.Context, sub *stream.Subscription) error {
	wctx, cancel := context.WithTimeout(ctx, p.cfg.Interval)
	defer cancel()
	for {
		evs, err := sub.Next(wctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return nil
			}
			return err
		}
		for _, ev := range evs {
			if ev.Kind == state.KindMachine || ev.Kind == state.KindModel || ev.Kind == state.KindControllerNode {
				return nil
			}
		}
	}
}

func (p *Provisioner) reconcile(ctx context.Context) error {
	snap := p.cfg.Store.Snapshot()
	models, err := snap.ListModels()
	if err != nil {
		return err
	}
	_, binErr := os.Stat(p.cfg.AgentBinary)
	if binErr != nil && !p.warned {
		p.cfg.Logger.Warn("agent binary not found: machines are not provisioned", "binary", p.cfg.AgentBinary, "err", binErr)
		p.warned = true
	}
	seen := map[string]bool{}    // "<model>/<id>" of every machine in the store
	present := map[string]bool{} // every model in the store
	for _, m := range models {
		present[m.UUID] = true
		if err := p.noteMigration(m); err != nil {
			p.cfg.Logger.Warn("local provisioner", "model", m.UUID, "err", err)
		}
		machines, err := snap.ListMachines(m.UUID)
		if err != nil {
			return err
		}
		for _, mc := range machines {
			seen[m.UUID+"/"+mc.ID] = true
			// A model handed over to another controller is that
			// controller's: its agents and workloads run on, supervised
			// there (handover.go).
			if handedOver(m) {
				if err := p.forget(p.placeOf(mc)); err != nil {
					p.cfg.Logger.Warn("local provisioner", "model", m.UUID, "machine", mc.ID, "err", err)
				}
				continue
			}
			// A model being imported is not this controller's until the
			// migration activates it: its machines run under the source
			// controller, and starting their agents here would run their
			// hooks on both sides.
			if m.Importing() || (mc.ProviderID != "" && !strings.HasPrefix(mc.ProviderID, "local:")) {
				continue
			}
			if err := p.reconcileMachine(ctx, snap, m, mc, binErr == nil); err != nil {
				p.cfg.Logger.Warn("local provisioner", "model", m.UUID, "machine", mc.ID, "err", err)
			}
		}
	}
	return p.removeOrphans(seen, present)
}

// reconcileMachine provisions, supervises or tears down one machine. A
// quiesced source model's machines are only supervised: its agents must
// keep running while it migrates, and the model refuses the commands that
// provisioning and removal propose.
func (p *Provisioner) reconcileMachine(ctx context.Context, snap *state.Snapshot, m *api.Model, mc *api.Machine, haveBinary bool) error {
	migrating := m.Migration != nil && m.Migration.Role == api.MigrationSource
	units, err := snap.UnitsByMachine(m.UUID, mc.ID)
	if err != nil {
		return err
	}
	switch {
	case mc.ProviderID == "" && mc.Life == api.Alive:
		if haveBinary && !migrating {
			return p.provision(ctx, snap, mc)
		}
	case mc.Life != api.Alive && len(units) == 0 && !migrating:
		return p.teardown(ctx, mc)
	case mc.ProviderID != "":
		pl := p.placeOf(mc)
		// Linked first, so that a teardown from this controller's Dir
		// reaches the machine even while its agent fails to start.
		if err := p.linkArea(pl); err != nil {
			p.cfg.Logger.Warn("link the adopted machine's area", "model", mc.ModelUUID, "machine", mc.ID, "err", err)
		}
		if err := p.ensureRunning(pl); err != nil {
			return err
		}
		if mc.Area == "" {
			// Provisioned by a version that did not record it; ensureRunning
			// found its agent.conf there.
			if err := p.recordArea(ctx, mc, pl.dir); err != nil {
				return err
			}
		}
		if mc.InstanceStatus.Status != instanceRunning {
			return p.markRunning(ctx, mc.ModelUUID, mc.ID) // provisioned by a version that did not
		}
	}
	return nil
}

// recordArea records the machine's directory on its row.
func (p *Provisioner) recordArea(ctx context.Context, mc *api.Machine, dir string) error {
	_, _, err := p.cfg.Propose(ctx, state.SetMachineProvisionedType, &state.SetMachineProvisionedRequest{
		ModelUUID: mc.ModelUUID, ID: mc.ID, ProviderID: mc.ProviderID, Addresses: mc.Addresses, Area: dir})
	if err != nil {
		return fmt.Errorf("record the machine's area: %w", err)
	}
	return nil
}

func (p *Provisioner) machineDir(model, id string) string { return filepath.Join(p.cfg.Dir, model, id) }

func (p *Provisioner) provision(ctx context.Context, snap *state.Snapshot, mc *api.Machine) error {
	pl := p.ownPlace(mc.ModelUUID, mc.ID)
	dir, conf := pl.dir, pl.conf()
	p.stop(pl) // an earlier attempt's agent, if any
	u, err := p.ensureArea(pl)
	if err != nil {
		return err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	secret := hex.EncodeToString(b[:])
	tag := Tag(mc.ModelUUID, mc.ID)
	if _, _, err := p.cfg.Propose(ctx, state.SetCredentialType, &state.SetCredentialRequest{
		Credential: api.Credential{Tag: tag, ModelUUID: mc.ModelUUID, Hash: HashSecret(secret)}}); err != nil {
		return fmt.Errorf("set credential: %w", err)
	}
	nodes, err := snap.ListControllerNodes()
	if err != nil {
		return err
	}
	ac := api.AgentConfig{ModelUUID: mc.ModelUUID, Machine: mc.ID, Tag: tag, Secret: secret,
		CACert: string(p.cfg.CACert), DataDir: dir}
	for _, n := range nodes {
		if n.APIAddr != "" {
			ac.ControllerAddresses = append(ac.ControllerAddresses, n.APIAddr)
		}
	}
	data, err := json.MarshalIndent(ac, "", "  ")
	if err != nil {
		return err
	}
	if err := writeOwned(conf, data, u); err != nil {
		return err
	}
	if err := p.start(pl); err != nil {
		return err
	}
	_, _, err = p.cfg.Propose(ctx, state.SetMachineProvisionedType, &state.SetMachineProvisionedRequest{
		ModelUUID: mc.ModelUUID, ID: mc.ID, ProviderID: "local:" + p.cfg.Hostname + ":" + mc.ID,
		Addresses: []string{"127.0.0.1"}, Base: p.cfg.Base, Area: dir})
	if err != nil {
		return fmt.Errorf("set provisioned: %w", err)
	}
	if err := p.markRunning(ctx, mc.ModelUUID, mc.ID); err != nil {
		return err
	}
	p.cfg.Logger.Info("machine provisioned", "model", mc.ModelUUID, "machine", mc.ID, "pid", p.procs[mc.ModelUUID+"/"+mc.ID].pid)
	return nil
}

// hostBase is the host's OS as a Juju base, "ID@VERSION_ID" from an
// os-release file ("ubuntu@24.04", "debian@12"); "" when unknown.
func hostBase(file string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			fields[k] = strings.Trim(v, `"'`)
		}
	}
	if fields["ID"] == "" || fields["VERSION_ID"] == "" {
		return ""
	}
	return fields["ID"] + "@" + fields["VERSION_ID"]
}

// instanceRunning is the instance status of a provisioned machine, as
// Juju's providers report it ('machine-status' in status).
const instanceRunning = "running"

// sharedModeMessage is the instance status message of a machine in shared
// mode, where `drover status` shows it.
const sharedModeMessage = "Running as the controller's user: charm code is not isolated from the controller (run the controller as root)"

// markRunning records that the machine's instance exists and runs.
func (p *Provisioner) markRunning(ctx context.Context, model, id string) error {
	msg := "Running"
	if !p.isolated {
		msg = sharedModeMessage
	}
	_, _, err := p.cfg.Propose(ctx, state.SetStatusType, &state.SetStatusRequest{ModelUUID: model,
		Kind: api.StatusKindInstance, Entity: id, Status: api.Status{Status: instanceRunning, Message: msg, Since: p.cfg.Now()}})
	if err != nil {
		return fmt.Errorf("set instance status: %w", err)
	}
	return nil
}

// teardown removes a machine, in its place: one that migrated here from
// another controller of this host goes from that controller's Dir as one
// of this controller's own would. Its directory and user go before its
// row, so a failure is retried from the row (removeOrphans knows only the
// directories in this controller's Dir).
func (p *Provisioner) teardown(ctx context.Context, mc *api.Machine) error {
	pl := p.placeOf(mc)
	p.stop(pl)
	// Workloads a charm left running (a forced removal runs no stop hook)
	// go with the machine.
	KillProcessesUnder(pl.dir, p.cfg.StopGrace)
	if err := p.removeArea(pl); err != nil {
		return err
	}
	if err := p.unlinkArea(pl); err != nil {
		return err
	}
	if _, _, err := p.cfg.Propose(ctx, state.RemoveMachineType,
		&state.RemoveMachineRequest{ModelUUID: mc.ModelUUID, ID: mc.ID}); err != nil && !errors.Is(err, api.ErrNotFound) {
		return fmt.Errorf("remove machine: %w", err)
	}
	p.cfg.Logger.Info("machine removed", "model", mc.ModelUUID, "machine", mc.ID, "dir", pl.dir)
	return nil
}

// removeOrphans tears down machine directories the store does not know,
// but those of a model handed over to another controller (handover.go).
func (p *Provisioner) removeOrphans(seen, present map[string]bool) error {
	models, err := os.ReadDir(p.cfg.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, m := range models {
		if m.Name() == agentBinDir {
			continue
		}
		modelDir := filepath.Join(p.cfg.Dir, m.Name())
		if hasHandoverMarker(modelDir) {
			if !present[m.Name()] {
				p.removeHandedOverDir(modelDir)
			}
			continue
		}
		ids, err := os.ReadDir(modelDir)
		if err != nil {
			continue
		}
		for _, id := range ids {
			if seen[m.Name()+"/"+id.Name()] {
				continue
			}
			if id.Type()&os.ModeSymlink != 0 {
				// A link to the area of a machine adopted here: its target
				// went with the machine, or is another's now.
				if err := os.Remove(filepath.Join(modelDir, id.Name())); err != nil {
					return err
				}
				continue
			}
			pl := p.ownPlace(m.Name(), id.Name())
			p.stop(pl)
			if err := p.removeArea(pl); err != nil {
				return err
			}
		}
		if rest, _ := os.ReadDir(filepath.Join(p.cfg.Dir, m.Name())); len(rest) == 0 {
			os.Remove(filepath.Join(p.cfg.Dir, m.Name()))
		}
	}
	return nil
}

// removeEmptyDirs removes the machines' directory, and the models' inside
// it, where no machine is left, and the shared default root with its last
// controller, so a controller that stops with no machines leaves nothing
// behind on the host. A directory with anything in it stays (os.Remove
// refuses), so machines that go on running, or another node of the
// controller sharing the directory, lose nothing; that node recreates
// what it needs when it provisions a machine.
func (p *Provisioner) removeEmptyDirs() {
	entries, _ := os.ReadDir(p.cfg.Dir) // a missing directory has nothing to remove
	left := 0
	for _, e := range entries {
		if e.Name() == agentBinDir {
			continue
		}
		if e.IsDir() && hasHandoverMarker(filepath.Join(p.cfg.Dir, e.Name())) {
			p.removeHandedOverDir(filepath.Join(p.cfg.Dir, e.Name()))
		}
		if !e.IsDir() || os.Remove(filepath.Join(p.cfg.Dir, e.Name())) != nil {
			left++
		}
	}
	if left > 0 {
		return
	}
	// No machine is left to run the agent's copy; the next one copies it
	// again (agentBinary).
	_ = os.RemoveAll(filepath.Join(p.cfg.Dir, agentBinDir))
	_ = os.Remove(p.cfg.Dir)
	if abs, err := filepath.Abs(p.cfg.Dir); err == nil && filepath.Dir(abs) == machineRoot {
		_ = os.Remove(machineRoot)
	}
}
