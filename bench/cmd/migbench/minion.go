package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/bench/internal/agentsim"
)

// minion is one simulated machine agent following the minion protocol
// (docs/decisions/0036-minion-protocol.md) as agent/internal/machine's
// minion does, without hooks to wait for (no operation ever runs, so it is
// idle at once): one report per phase; VALIDATION dials the target's
// PathAgentValidate with the agent's own credential, TLS verified against
// the target's CA alone; at SUCCESS it reports, then logs in to the target
// and holds its stream.
type minion struct {
	tag, secret string
	src, dst    *agentsim.Conn
	onTarget    time.Time            // when the target's first state arrived
	reportedAt  map[string]time.Time // by phase: when the source answered the report
}

// follow runs the protocol on the source's stream until the agent holds
// its state from the target.
func (mn *minion) follow(ctx context.Context) error {
	reported := map[string]bool{} // "<migration>/<phase>"
	mn.reportedAt = map[string]time.Time{}
	for {
		var st *api.MachineState
		select {
		case st = <-mn.src.States:
		case <-mn.src.Done:
			return fmt.Errorf("%s: the source closed the stream before SUCCESS", mn.tag)
		case <-ctx.Done():
			return ctx.Err()
		}
		m := st.Migration
		if m == nil || reported[m.ID+"/"+m.Phase] {
			continue
		}
		rep := api.MinionReport{MigrationID: m.ID, Phase: m.Phase, Success: true}
		switch m.Phase {
		case api.MigrationQuiesce, api.MigrationSuccess:
		case api.MigrationValidation:
			if err := validate(ctx, m, mn.tag, mn.secret); err != nil {
				rep.Success, rep.Message = false, err.Error()
			}
		default:
			continue
		}
		if err := mn.src.Call(ctx, api.AgentMigrationReport, rep); err != nil {
			if m.Phase != api.MigrationSuccess {
				return fmt.Errorf("%s: report %s: %w", mn.tag, m.Phase, err)
			}
		}
		reported[m.ID+"/"+m.Phase] = true
		mn.reportedAt[m.Phase] = time.Now()
		if m.Phase == api.MigrationSuccess {
			return mn.move(ctx, m.Target)
		}
	}
}

// move logs in to the target and waits for its first state.
func (mn *minion) move(ctx context.Context, t *api.TargetController) error {
	if t == nil || len(t.Addresses) == 0 {
		return fmt.Errorf("%s: SUCCESS names no target", mn.tag)
	}
	d := agentsim.WSDialer([]byte(t.CACert))
	var errs []error
	for _, addr := range t.Addresses {
		c, err := agentsim.Dial(ctx, &d, addr, mn.tag, mn.secret)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		select {
		case <-c.Initial:
		case <-c.Done:
			errs = append(errs, fmt.Errorf("%s: the target closed the stream", mn.tag))
			continue
		case <-ctx.Done():
			c.Close()
			return ctx.Err()
		}
		mn.dst, mn.onTarget = c, c.First
		mn.src.Close()
		return nil
	}
	return errors.Join(errs...)
}

// validate dials the target's PathAgentValidate as the agent does: each
// address in turn, TLS verified against the target's CA alone, Basic
// auth, Juju's 10 tries from 100 ms ×1.6.
func validate(ctx context.Context, m *api.AgentMigration, tag, secret string) error {
	t := m.Target
	if t == nil || len(t.Addresses) == 0 || t.CACert == "" {
		return fmt.Errorf("migration %s names no target controller to validate against", m.ID)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(t.CACert)) {
		return errors.New("the target controller's CA certificate does not parse")
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	body, _ := json.Marshal(api.AgentValidateRequest{MigrationID: m.ID})
	delay := 100 * time.Millisecond
	var last error
	for attempt := range 10 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(delay):
			}
			delay = time.Duration(float64(delay) * 1.6)
		}
		for _, addr := range t.Addresses {
			if last = validateAt(ctx, hc, addr, tag, secret, body); last == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("cannot log in to the target controller: %w", last)
}

func validateAt(ctx context.Context, hc *http.Client, addr, tag, secret string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+api.PathAgentValidate, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(tag, secret)
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
