package machine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/droverhq/drover/agent/internal/apiconn"
	"github.com/droverhq/drover/agent/internal/fortress"
	"github.com/droverhq/drover/agent/internal/uniter"
	"github.com/droverhq/drover/api"
)

// minion is the machine agent's part in its model's migration (Juju's
// migration minion). While the machine state names a migration the
// fortress holds every new operation; for each phase the minion sees it
// sends exactly one successful report (api.AgentMigrationReport) once
// ready:
//
//   - QUIESCE: once no operation runs on the machine; Success.
//   - VALIDATION: after dialling the target (POST api.PathAgentValidate at
//     each of its addresses in turn, TLS verified against the target's CA
//     alone, Basic auth as the agent), retried with backoff; Success, or
//     not with the error.
//   - SUCCESS: Success, sent to the source first; then the target's
//     addresses and CA are persisted (agent.conf, controllers.json) and
//     the connection switches to it.
//
// A report sent is recorded in <data-dir>/migration.json before anything
// else happens, so a restarted agent does not send it again; what remains
// to do comes from that file and the state (a restart at SUCCESS after
// the report only switches). A report the controller refuses (the
// migration ended, or moved on) is not recorded: the next state decides.
type minion struct {
	conn minionConn
	// move persists the target controller and switches to it (Agent.moveTo).
	move    func(api.TargetController) error
	dataDir string
	// tag and secret are the agent's credential, which VALIDATION checks
	// on the target.
	tag, secret string
	gate        *fortress.Fortress
	retry       validateRetry
	log         *slog.Logger
}

// minionConn is what the minion needs of the controller connection.
type minionConn interface {
	State() (*api.MachineState, <-chan struct{})
	Call(ctx context.Context, method string, params, out any) error
}

// validateRetry is how VALIDATION retries dialling the target: Juju's 10
// tries from 100 ms, ×1.6 between them.
type validateRetry struct {
	attempts int
	delay    time.Duration
	factor   float64
}

var defaultValidateRetry = validateRetry{attempts: 10, delay: 100 * time.Millisecond, factor: 1.6}

// minionRecord is <data-dir>/migration.json: the reports sent for one
// migration, by phase.
type minionRecord struct {
	MigrationID string   `json:"migration-id"`
	Reported    []string `json:"reported"`
}

func (mn *minion) recordFile() string { return filepath.Join(mn.dataDir, "migration.json") }

func (mn *minion) load() (minionRecord, error) {
	var r minionRecord
	data, err := os.ReadFile(mn.recordFile())
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(data, &r)
}

func (mn *minion) reported(m *api.AgentMigration) (bool, error) {
	r, err := mn.load()
	return err == nil && r.MigrationID == m.ID && slices.Contains(r.Reported, m.Phase), err
}

func (mn *minion) markReported(m *api.AgentMigration) error {
	r, err := mn.load()
	if err != nil || r.MigrationID != m.ID {
		r = minionRecord{MigrationID: m.ID}
	}
	r.Reported = append(r.Reported, m.Phase)
	data, _ := json.Marshal(r)
	return uniter.WriteFileAtomic(mn.recordFile(), data, 0o600)
}

// run follows the machine state until ctx ends.
func (mn *minion) run(ctx context.Context) error {
	for {
		ms, changed := mn.conn.State()
		var retry <-chan time.Time
		if ms != nil && ms.Migration != nil {
			if err := mn.phase(ctx, ms.Migration, changed); err != nil && ctx.Err() == nil {
				mn.log.Warn("migration minion: will retry", "migration", ms.Migration.ID, "phase", ms.Migration.Phase, "err", err)
				retry = time.After(time.Second)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-retry:
		}
	}
}

// phase does what m's phase asks of the agent, once.
func (mn *minion) phase(ctx context.Context, m *api.AgentMigration, changed <-chan struct{}) error {
	done, err := mn.reported(m)
	if err != nil {
		return err
	}
	if !done {
		rep := api.MinionReport{MigrationID: m.ID, Phase: m.Phase, Success: true}
		switch m.Phase {
		case api.MigrationQuiesce:
			select {
			case <-mn.gate.Idle():
			case <-changed:
				return nil // decided again from the new state
			case <-ctx.Done():
				return nil
			}
		case api.MigrationValidation:
			if err := mn.validate(ctx, m); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				rep.Success, rep.Message = false, err.Error()
			}
		case api.MigrationSuccess:
		default:
			return nil // a phase this agent does not know: nothing to do
		}
		switch err := mn.report(ctx, rep); {
		case err == nil:
			if err := mn.markReported(m); err != nil {
				return err
			}
			mn.log.Info("migration minion reported", "migration", m.ID, "phase", m.Phase, "success", rep.Success, "message", rep.Message)
		case m.Phase != api.MigrationSuccess || ctx.Err() != nil:
			return err
		default:
			// At SUCCESS the model is the target's whatever the source
			// says: the agent moves.
			mn.log.Warn("migration minion: the source refused the report; moving to the target", "migration", m.ID, "err", err)
		}
	}
	if m.Phase == api.MigrationSuccess {
		if m.Target == nil {
			return fmt.Errorf("migration %s succeeded but names no target controller", m.ID)
		}
		return mn.move(*m.Target)
	}
	return nil
}

// report sends rep, retrying while the connection is down.
func (mn *minion) report(ctx context.Context, rep api.MinionReport) error {
	delay := 100 * time.Millisecond
	for {
		err := mn.conn.Call(ctx, api.AgentMigrationReport, rep, nil)
		if err == nil || !errors.Is(err, apiconn.ErrDisconnected) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// validate dials the migration's target with the agent's credential.
func (mn *minion) validate(ctx context.Context, m *api.AgentMigration) error {
	t := m.Target
	switch {
	case t == nil || len(t.Addresses) == 0:
		return fmt.Errorf("migration %s names no target controller to validate against", m.ID)
	case t.CACert == "":
		return fmt.Errorf("migration %s names no CA certificate for the target controller", m.ID)
	}
	tlsCfg, err := apiconn.TLSConfig([]byte(t.CACert))
	if err != nil {
		return fmt.Errorf("the target controller's CA certificate: %w", err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	defer hc.CloseIdleConnections()
	body, _ := json.Marshal(api.AgentValidateRequest{MigrationID: m.ID})
	r, delay := mn.retry, mn.retry.delay
	var last error
	for attempt := range r.attempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(delay):
			}
			delay = time.Duration(float64(delay) * r.factor)
		}
		for _, addr := range t.Addresses {
			if last = mn.validateAt(ctx, hc, addr, body); last == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("cannot log in to the target controller: %w", last)
}

func (mn *minion) validateAt(ctx context.Context, hc *http.Client, addr string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+api.PathAgentValidate, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(mn.tag, mn.secret)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil
	}
	var e api.Error
	if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Code != "" {
		return fmt.Errorf("%s: %w", addr, &e)
	}
	return fmt.Errorf("%s: HTTP %d", addr, resp.StatusCode)
}
