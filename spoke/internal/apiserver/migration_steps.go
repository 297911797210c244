package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

// The driver's steps after the import (api/migration.go): the model as
// the controller holds it, the source's phases, the prechecks of both
// sides, the reap, and the model's debug log read from the source and
// written to the target.

// getModel answers the model, one being imported too, as a read at the
// index or consistency the query asks.
func (s *migrationEndpoint) getModel(w http.ResponseWriter, r *http.Request) {
	if err := checkMigrationID(r.URL.Query().Get("migration")); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	m, err := lookup.Model(snap, modelOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, m)
}

// setPhase moves the source model's migration to the phase asked and
// answers the model.
func (s *migrationEndpoint) setPhase(w http.ResponseWriter, r *http.Request) {
	var req api.MigrationPhaseRequest
	if !s.decodeKeyed(w, r, &req, func() string { return req.MigrationID }) {
		return
	}
	idx, err := s.propose(r, state.SetMigrationPhaseType, &state.SetMigrationPhaseRequest{ModelUUID: modelOf(r),
		MigrationID: req.MigrationID, Phase: req.Phase, Target: req.Target}, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	s.answerModel(w, r, idx)
}

// reap drops the source's copy of a model its migration took to SUCCESS,
// keeping a tombstone; 204.
func (s *migrationEndpoint) reap(w http.ResponseWriter, r *http.Request) {
	s.stepNoContent(w, r, func(model, id string) (state.MessageType, any) {
		return state.ReapModelType, &state.ReapModelRequest{ModelUUID: model, MigrationID: id, Now: s.now()}
	})
}

// precheck answers whether this controller can take its role in the
// migration, read at a consistent index: as the source, the model's
// description; as the target, whether it can adopt the model the
// source described.
func (s *migrationEndpoint) precheck(w http.ResponseWriter, r *http.Request) {
	var req api.MigrationPrecheckRequest
	if !s.decodeKeyed(w, r, &req, func() string { return req.MigrationID }) {
		return
	}
	if _, err := s.b.WaitRead(r.Context(), 0, true); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	snap := s.b.Store().Snapshot()
	var res *api.MigrationPrecheckResult
	var err error
	switch req.Role {
	case api.MigrationSource:
		res, err = s.precheckSource(snap, modelOf(r), req.MigrationID)
	case api.MigrationTarget:
		res, err = s.precheckTarget(snap, modelOf(r), req.Source)
	default:
		err = api.Errorf(api.CodeInvalid, "precheck role %q: want %q or %q", req.Role, api.MigrationSource, api.MigrationTarget)
	}
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, res)
}

// statusError is the agent or workload status of a unit whose hook failed.
const statusError = "error"

// precheckSource checks the model can leave: alive, not part of another
// migration, no unit in error. It answers the model's description.
func (s *migrationEndpoint) precheckSource(snap *state.Snapshot, model, id string) (*api.MigrationPrecheckResult, error) {
	m, err := lookup.Model(snap, model)
	if err != nil {
		return nil, err
	}
	switch {
	case m.Importing():
		return nil, api.Errorf(api.CodeConflict, "model %q is being imported to this controller (migration %s): it cannot migrate from here", m.Name, m.Migration.ID)
	case m.Migration != nil && m.Migration.ID != id:
		return nil, api.Errorf(api.CodeMigrating, "model %q is already part of migration %s", m.Name, m.Migration.ID)
	case m.Life != api.Alive:
		return nil, api.Errorf(api.CodeInvalid, "model %q is %s: only a live model can migrate", m.Name, m.Life)
	}
	ctrl, err := lookup.Controller(snap)
	if err != nil {
		return nil, err
	}
	units, err := snap.ListUnits(model)
	if err != nil {
		return nil, err
	}
	var inError []string
	for _, u := range units {
		if u.AgentStatus.Status == statusError || u.WorkloadStatus.Status == statusError {
			inError = append(inError, fmt.Sprintf("unit %s is in error: fix or resolve it first", u.Name))
		}
	}
	if len(inError) > 0 {
		return nil, api.Errorf(api.CodeInvalid, "model %q cannot migrate: %s", m.Name, strings.Join(inError, "; "))
	}
	machines, err := snap.ListMachines(model)
	if err != nil {
		return nil, err
	}
	var hosts, unsettled, tags []string
	for _, mc := range machines {
		tags = append(tags, "machine-"+model+"-"+mc.ID)
		h, local := localHost(mc.ProviderID)
		switch {
		case mc.ProviderID == "":
			unsettled = append(unsettled, fmt.Sprintf("machine %s is not provisioned yet: wait until it is started", mc.ID))
		case mc.Life != api.Alive:
			unsettled = append(unsettled, fmt.Sprintf("machine %s is %s: wait until it is removed", mc.ID, mc.Life))
		case local && mc.Area == "":
			// The target would not find the machine's directory.
			unsettled = append(unsettled, fmt.Sprintf("machine %s has no recorded directory yet: wait for the provisioner to record it", mc.ID))
		}
		if local && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if len(unsettled) > 0 {
		return nil, api.Errorf(api.CodeInvalid, "model %q cannot migrate: %s", m.Name, strings.Join(unsettled, "; "))
	}
	slices.Sort(hosts)
	return &api.MigrationPrecheckResult{ModelUUID: m.UUID, ModelName: m.Name, Owner: m.Owner, ControllerUUID: ctrl.UUID,
		Version: s.cfg.Version, ExportVersion: state.ModelExportVersion, Machines: len(machines), Units: len(units), Hosts: hosts, Agents: tags}, nil
}

// localHost is the host of a local substrate machine's provider ID,
// "local:<host>:<id>".
func localHost(providerID string) (string, bool) {
	rest, ok := strings.CutPrefix(providerID, "local:")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, ":")
	if i <= 0 {
		return "", false
	}
	return rest[:i], true
}

// precheckTarget checks this controller can adopt the model src
// describes: an export it reads, a version not older than the source's,
// no live model of the UUID or of the owner and name, and its local
// machines on this host.
func (s *migrationEndpoint) precheckTarget(snap *state.Snapshot, model string, src *api.MigrationPrecheckResult) (*api.MigrationPrecheckResult, error) {
	switch {
	case src == nil:
		return nil, api.Errorf(api.CodeInvalid, "a target's precheck needs the source's description (source)")
	case src.ModelUUID != model:
		return nil, api.Errorf(api.CodeInvalid, "the source describes model %s, not %s", src.ModelUUID, model)
	case src.ExportVersion > state.ModelExportVersion:
		return nil, api.Errorf(api.CodeInvalid, "the source writes exports of version %d; this controller reads versions up to %d: upgrade it first",
			src.ExportVersion, state.ModelExportVersion)
	}
	newer, err := newerMinor(src.Version, s.cfg.Version)
	if err != nil {
		return nil, err
	}
	if newer {
		return nil, api.Errorf(api.CodeInvalid, "target controller runs drover %s, older than the source's %s: upgrade it first", s.cfg.Version, src.Version)
	}
	ctrl, err := lookup.Controller(snap)
	if err != nil {
		return nil, err
	}
	if src.ControllerUUID == ctrl.UUID {
		return nil, api.Errorf(api.CodeInvalid, "model %q is already on this controller: a migration needs another one", src.ModelName)
	}
	if m, err := snap.ModelByUUID(model); err != nil {
		return nil, err
	} else if m != nil && !m.Importing() {
		return nil, api.Errorf(api.CodeAlreadyExists, "model %s (%q) already exists on this controller", m.UUID, m.Name)
	}
	if m, err := snap.ModelByName(src.Owner, src.ModelName); err != nil {
		return nil, err
	} else if m != nil && m.UUID != model {
		return nil, api.Errorf(api.CodeAlreadyExists, "%s already has a model called %q on this controller", src.Owner, src.ModelName)
	}
	for _, h := range src.Hosts {
		if h != s.cfg.Hostname {
			return nil, api.Errorf(api.CodeInvalid, "the model's machines run on host %s; a controller on host %s cannot adopt them", h, s.cfg.Hostname)
		}
	}
	return &api.MigrationPrecheckResult{ModelUUID: model, ModelName: src.ModelName, Owner: src.Owner, ControllerUUID: ctrl.UUID,
		Version: s.cfg.Version, ExportVersion: state.ModelExportVersion, Machines: src.Machines, Units: src.Units, Hosts: src.Hosts}, nil
}

// newerMinor reports whether version a is newer than b by major.minor.
func newerMinor(a, b string) (bool, error) {
	am, an, err := majorMinor(a)
	if err != nil {
		return false, api.Errorf(api.CodeInvalid, "the source's drover version %q is not major.minor[.patch]", a)
	}
	bm, bn, err := majorMinor(b)
	if err != nil {
		return false, fmt.Errorf("this controller's version %q: %w", b, err)
	}
	return am > bm || (am == bm && an > bn), nil
}

func majorMinor(v string) (int, int, error) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("version %q is not major.minor[.patch]", v)
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil {
		return 0, 0, err
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// getLogs streams the model's debug-log records this node holds, oldest
// first, as newline-delimited api.LogRecord.
func (s *migrationEndpoint) getLogs(w http.ResponseWriter, r *http.Request) {
	if err := checkMigrationID(r.URL.Query().Get("migration")); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	model := modelOf(r)
	if _, err := lookup.Model(s.b.Store().Snapshot(), model); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	recs, _ := s.book.since(model, 0)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, rec := range recs {
		if err := enc.Encode(rec); err != nil {
			return
		}
	}
}

// sendLogs appends the newline-delimited records of the body to this
// node's log of the model, skipping those it holds; 204.
func (s *migrationEndpoint) sendLogs(w http.ResponseWriter, r *http.Request) {
	if err := checkStepKey(r, r.URL.Query().Get("migration")); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	model := modelOf(r)
	if _, err := lookup.Model(s.b.Store().Snapshot(), model); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	recs, err := decodeLogRecords(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodySize), s.cfg.MaxBodySize)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	s.book.appendNew(model, recs)
	w.WriteHeader(http.StatusNoContent)
}

// decodeLogRecords reads newline-delimited api.LogRecord values (blank
// lines skipped), each naming its entity and time, from a body of at most
// max bytes; a longer one is refused whole.
func decodeLogRecords(body io.Reader, max int64) ([]api.LogRecord, error) {
	data, err := io.ReadAll(io.LimitReader(body, max+1))
	var tooBig *http.MaxBytesError
	switch {
	case int64(len(data)) > max || errors.As(err, &tooBig):
		return nil, api.Errorf(api.CodeTooLarge, "the log records are over %d bytes: send them in smaller batches", max)
	case err != nil:
		return nil, api.Errorf(api.CodeBadRequest, "reading the log records: %v", err)
	}
	var out []api.LogRecord
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var rec api.LogRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		err := dec.Decode(&rec)
		if err == nil && dec.More() {
			err = errors.New("data after the record")
		}
		if err != nil {
			return nil, api.Errorf(api.CodeBadRequest, "log record on line %d is not one JSON LogRecord: %v", i+1, err)
		}
		if rec.Entity == "" || rec.Time.IsZero() {
			return nil, api.Errorf(api.CodeBadRequest, "log record on line %d needs an entity and a time", i+1)
		}
		out = append(out, rec)
	}
	return out, nil
}

// checkMigrationID checks a read's ?migration= (reads carry no
// Idempotency-Key).
func checkMigrationID(id string) error {
	if id == "" || len(id) > 64 || strings.Contains(id, "/") {
		return api.Errorf(api.CodeInvalid, "a migration ID of 1 to 64 characters without '/' is required (?migration=), got %q", id)
	}
	return nil
}
