package migrate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/migrate"
)

// fakeControllers is the test double of the source and target
// controllers: their migration routes, with agents that report at once,
// and failures injected per operation.
type fakeControllers struct {
	mu     sync.Mutex
	source string // controller UUIDs
	target string
	agents []string // the source model's agent tags

	// calls are "<driver> <controller role> <op> <key>", in order.
	calls []string
	// fail makes an operation ("source quiesce", "target import") fail
	// that many more times (-1: always).
	fail map[string]int
	// agentFail makes agents report failure in a minion phase; agentSilent
	// keeps them silent in it.
	agentFail, agentSilent map[string]bool

	// redirects makes the source answer reads of the model with a
	// redirect once its agents were told SUCCESS.
	redirects bool

	srcMigration         *api.ModelMigration
	importing, activated bool
	importID             string
	reaped, released     bool
	logsSent             int
	// blobs are the charm archives and resources the model names (by
	// SHA-256) and blobsPut those the target received.
	blobs, blobsPut []string
}

func newFake(source, target string, agents ...string) *fakeControllers {
	return &fakeControllers{source: source, target: target, agents: agents, fail: map[string]int{},
		agentFail: map[string]bool{}, agentSilent: map[string]bool{}}
}

// as gives the controllers as driver name sees them.
func (f *fakeControllers) as(name string) migrate.Controllers { return fakeDialer{f, name} }

type fakeDialer struct {
	f    *fakeControllers
	name string
}

func (d fakeDialer) Client(_ context.Context, uuid string) (migrate.Client, error) {
	switch uuid {
	case d.f.source:
		return &fakeClient{f: d.f, driver: d.name, role: "source"}, nil
	case d.f.target:
		return &fakeClient{f: d.f, driver: d.name, role: "target"}, nil
	}
	return nil, fmt.Errorf("no controller %s", uuid)
}

func (f *fakeControllers) setFail(op string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[op] = n
}

// callsOf lists the keys op was called with.
func (f *fakeControllers) callsOf(op string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for _, c := range f.calls {
		parts := strings.Fields(c)
		if parts[1]+" "+parts[2] == op {
			keys = append(keys, parts[3])
		}
	}
	return keys
}

// drivers lists the drivers that called.
func (f *fakeControllers) drivers() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for _, c := range f.calls {
		out[strings.Fields(c)[0]] = true
	}
	return out
}

// report has every agent report phase as it is told to.
func (f *fakeControllers) reportLocked(id, phase string) {
	f.srcMigration.Minions = map[string]api.MinionReport{}
	for _, tag := range f.agents {
		if f.agentSilent[phase] {
			continue
		}
		r := api.MinionReport{MigrationID: id, Phase: phase, Success: !f.agentFail[phase], Time: time.Now()}
		if f.agentFail[phase] {
			r.Message = "cannot reach the target"
		}
		f.srcMigration.Minions[tag] = r
	}
}

type fakeClient struct {
	f      *fakeControllers
	driver string
	role   string
}

func (c *fakeClient) Close() {}

// enter records the call and answers an injected failure.
func (c *fakeClient) enter(op, key string) error {
	c.f.calls = append(c.f.calls, c.driver+" "+c.role+" "+op+" "+key)
	name := c.role + " " + op
	switch n := c.f.fail[name]; {
	case n < 0:
		return api.Errorf(api.CodeUnavailable, "%s is down", name)
	case n > 0:
		c.f.fail[name] = n - 1
		return api.Errorf(api.CodeUnavailable, "%s is down", name)
	}
	return nil
}

func (c *fakeClient) MigrationPrecheck(_ context.Context, model string, step api.MigrationStep, req api.MigrationPrecheckRequest) (*api.MigrationPrecheckResult, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("precheck", step.Key); err != nil {
		return nil, err
	}
	return &api.MigrationPrecheckResult{ModelUUID: model, ModelName: "shop", Machines: len(c.f.agents), Units: len(c.f.agents),
		Agents: slices.Clone(c.f.agents)}, nil
}

func (c *fakeClient) MigrationQuiesce(_ context.Context, _ string, step api.MigrationStep) (*api.Model, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("quiesce", step.Key); err != nil {
		return nil, err
	}
	if c.f.srcMigration == nil || c.f.srcMigration.ID != step.MigrationID {
		c.f.srcMigration = &api.ModelMigration{ID: step.MigrationID, Role: api.MigrationSource, Phase: api.MigrationQuiesce}
		c.f.reportLocked(step.MigrationID, api.MigrationQuiesce)
	}
	return &api.Model{}, nil
}

func (c *fakeClient) MigrationRelease(_ context.Context, _ string, step api.MigrationStep) (*api.Model, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("release", step.Key); err != nil {
		return nil, err
	}
	c.f.srcMigration, c.f.released = nil, true
	return &api.Model{}, nil
}

func (c *fakeClient) MigrationSetPhase(_ context.Context, _ string, step api.MigrationStep, phase string, target *api.TargetController) (*api.Model, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("phase-"+phase, step.Key); err != nil {
		return nil, err
	}
	if target == nil || target.ControllerUUID != c.f.target {
		return nil, api.Errorf(api.CodeInvalid, "no target")
	}
	if c.f.srcMigration == nil {
		return nil, api.Errorf(api.CodeConflict, "not quiesced")
	}
	if c.f.srcMigration.Phase != phase {
		c.f.srcMigration.Phase, c.f.srcMigration.Target = phase, target
		c.f.reportLocked(step.MigrationID, phase)
	}
	return &api.Model{}, nil
}

func (c *fakeClient) MigrationExport(_ context.Context, model string, step api.MigrationStep) ([]byte, string, uint64, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("export", step.Key); err != nil {
		return nil, "", 0, err
	}
	data := []byte(`{"model":"` + model + `"}`)
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:]), 7, nil
}

func (c *fakeClient) MigrationImport(_ context.Context, _ string, step api.MigrationStep, data []byte, sha string) (*api.Model, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("import", step.Key); err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != sha {
		return nil, api.Errorf(api.CodeInvalid, "sha mismatch")
	}
	c.f.importing, c.f.importID = true, step.MigrationID
	return &api.Model{}, nil
}

func (c *fakeClient) MigrationActivate(_ context.Context, _ string, step api.MigrationStep) (*api.Model, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("activate", step.Key); err != nil {
		return nil, err
	}
	if !c.f.importing && !c.f.activated {
		return nil, api.Errorf(api.CodeNotFound, "no import")
	}
	c.f.importing, c.f.activated = false, true
	return &api.Model{}, nil
}

func (c *fakeClient) MigrationAbortImport(_ context.Context, _ string, step api.MigrationStep) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("abort-import", step.Key); err != nil {
		return err
	}
	if c.f.activated {
		return api.Errorf(api.CodeConflict, "activated")
	}
	c.f.importing, c.f.importID = false, ""
	return nil
}

func (c *fakeClient) MigrationModel(_ context.Context, model, id string) (*api.Model, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("model", id); err != nil {
		return nil, err
	}
	if c.role == "target" {
		if !c.f.importing {
			return nil, api.Errorf(api.CodeNotFound, "model %s not found", model)
		}
		return &api.Model{Migration: &api.ModelMigration{ID: c.f.importID, Role: api.MigrationTarget}}, nil
	}
	if c.f.srcMigration == nil {
		return &api.Model{}, nil
	}
	if c.f.redirects && c.f.srcMigration.Phase == api.MigrationSuccess {
		return nil, api.Redirect(model, *c.f.srcMigration.Target)
	}
	mig := *c.f.srcMigration
	mig.Minions = map[string]api.MinionReport{}
	for k, v := range c.f.srcMigration.Minions {
		mig.Minions[k] = v
	}
	return &api.Model{Migration: &mig}, nil
}

func (c *fakeClient) MigrationReap(_ context.Context, _ string, step api.MigrationStep) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("reap", step.Key); err != nil {
		return err
	}
	c.f.reaped = true
	return nil
}

func (c *fakeClient) MigrationLogs(_ context.Context, _, id string) ([]api.LogRecord, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("logs", id); err != nil {
		return nil, err
	}
	return []api.LogRecord{{}, {}, {}}, nil
}

func (c *fakeClient) MigrationSendLogs(_ context.Context, _ string, step api.MigrationStep, recs []api.LogRecord) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("send-logs", step.Key); err != nil {
		return err
	}
	c.f.logsSent = len(recs)
	return nil
}

// fakeTraces is what the controllers hold of a migration.
type fakeTraces struct {
	importing, activated, quiesced, reaped bool
	logs                                   int
}

func (f *fakeControllers) traces() fakeTraces {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fakeTraces{importing: f.importing, activated: f.activated, quiesced: f.srcMigration != nil, reaped: f.reaped, logs: f.logsSent}
}

func (c *fakeClient) MigrationMissingBlobs(_ context.Context, _, id string) ([]string, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("missing-blobs", id); err != nil {
		return nil, err
	}
	var missing []string
	for _, b := range c.f.blobs {
		if c.role == "target" && !slices.Contains(c.f.blobsPut, b) {
			missing = append(missing, b)
		}
	}
	return missing, nil
}

func (c *fakeClient) MigrationBlob(_ context.Context, _, id, sha string) ([]byte, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("blob", id); err != nil {
		return nil, err
	}
	return []byte(sha), nil
}

func (c *fakeClient) MigrationPutBlob(_ context.Context, _ string, step api.MigrationStep, sha string, data []byte) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if err := c.enter("put-blob", step.Key); err != nil {
		return err
	}
	if string(data) != sha {
		return api.Errorf(api.CodeInvalid, "blob %s: other content", sha)
	}
	if !slices.Contains(c.f.blobsPut, sha) {
		c.f.blobsPut = append(c.f.blobsPut, sha)
	}
	return nil
}
