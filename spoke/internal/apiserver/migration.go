package apiserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

// migrationEndpoint serves /v1/controller/migrations/{model}: the steps
// the hub's migration driver takes on a controller (api/migration.go),
// each one raft command of state/migration.go or a read. Those commands
// are idempotent for their migration, so a step asked again with the same
// Idempotency-Key is proposed again and answers as the first did.
type migrationEndpoint struct {
	*base
	book *logBook // this node's debug log, which a migration transfers
}

// maxExportSizeLimit bounds Config.MaxExportSize: an import is one raft
// command, which a follower forwards to the leader base64-encoded in a
// body of at most 64 MiB (peerroutes.go).
const maxExportSizeLimit = 40 << 20

func (s *migrationEndpoint) quiesce(w http.ResponseWriter, r *http.Request) {
	s.step(w, r, func(model, id string) (state.MessageType, any) {
		return state.QuiesceModelType, &state.QuiesceModelRequest{ModelUUID: model, MigrationID: id, Now: s.now()}
	})
}

func (s *migrationEndpoint) release(w http.ResponseWriter, r *http.Request) {
	s.step(w, r, func(model, id string) (state.MessageType, any) {
		return state.ReleaseModelType, &state.ReleaseModelRequest{ModelUUID: model, MigrationID: id}
	})
}

func (s *migrationEndpoint) activate(w http.ResponseWriter, r *http.Request) {
	s.step(w, r, func(model, id string) (state.MessageType, any) {
		return state.ActivateModelType, &state.ActivateModelRequest{ModelUUID: model, MigrationID: id}
	})
}

// abortImport answers 204: the model is gone, or was never imported.
func (s *migrationEndpoint) abortImport(w http.ResponseWriter, r *http.Request) {
	s.stepNoContent(w, r, func(model, id string) (state.MessageType, any) {
		return state.AbortImportType, &state.AbortImportRequest{ModelUUID: model, MigrationID: id}
	})
}

// stepNoContent is step for a command whose answer is 204, with the raft
// index it committed at.
func (s *migrationEndpoint) stepNoContent(w http.ResponseWriter, r *http.Request, cmd func(model, id string) (state.MessageType, any)) {
	id, ok := s.decodeStep(w, r)
	if !ok {
		return
	}
	t, body := cmd(modelOf(r), id)
	idx, err := s.propose(r, t, body, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	w.Header().Set(api.HeaderIndex, strconv.FormatUint(idx, 10))
	w.WriteHeader(http.StatusNoContent)
}

// decodeStep decodes a MigrationStepRequest and checks the call's
// Idempotency-Key names its migration. On failure it has answered, and ok
// is false.
func (s *migrationEndpoint) decodeStep(w http.ResponseWriter, r *http.Request) (string, bool) {
	var req api.MigrationStepRequest
	ok := s.decodeKeyed(w, r, &req, func() string { return req.MigrationID })
	return req.MigrationID, ok
}

// decodeKeyed decodes a step's body into v and checks the call's
// Idempotency-Key names the migration id reads from it. On failure it has
// answered, and returns false.
func (s *migrationEndpoint) decodeKeyed(w http.ResponseWriter, r *http.Request, v any, id func() string) bool {
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, v); err != nil {
		reply.WriteError(w, r, err)
		return false
	}
	if err := checkStepKey(r, id()); err != nil {
		reply.WriteError(w, r, err)
		return false
	}
	return true
}

// step decodes a MigrationStepRequest, checks its key, proposes the
// command cmd makes of it and answers the model as the command left it.
func (s *migrationEndpoint) step(w http.ResponseWriter, r *http.Request, cmd func(model, id string) (state.MessageType, any)) {
	id, ok := s.decodeStep(w, r)
	if !ok {
		return
	}
	t, body := cmd(modelOf(r), id)
	idx, err := s.propose(r, t, body, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	s.answerModel(w, r, idx)
}

// answerModel answers the route's model as of raft index idx.
func (s *migrationEndpoint) answerModel(w http.ResponseWriter, r *http.Request, idx uint64) {
	if _, err := s.b.WaitRead(r.Context(), idx, false); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	m, err := lookup.Model(s.b.Store().Snapshot(), modelOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, idx, m)
}

// export streams the model's export, read at a consistent read index:
// every write acknowledged before the call is in it. The bytes are
// written twice from one snapshot (the same snapshot gives the same
// bytes), the first time to learn their SHA-256 and length for the
// headers, so a large model is never held in memory.
func (s *migrationEndpoint) export(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("migration")
	if err := checkStepKey(r, id); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if _, err := s.b.WaitRead(r.Context(), 0, true); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	snap := s.b.Store().Snapshot()
	m, err := lookup.Model(snap, modelOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if m.Importing() {
		reply.WriteError(w, r, api.Errorf(api.CodeConflict, "model %q is being imported to this controller (migration %s): it cannot be exported", m.Name, m.Migration.ID))
		return
	}
	ctrl, err := lookup.Controller(snap)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	idx, err := snap.LatestIndex()
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	var n countWriter
	sum, err := state.ExportModel(snap, m.UUID, ctrl.UUID, idx, &n)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(int64(n), 10))
	h.Set(api.HeaderExportSHA256, sum)
	h.Set(api.HeaderIndex, strconv.FormatUint(idx, 10))
	w.WriteHeader(http.StatusOK)
	if _, err := state.ExportModel(snap, m.UUID, ctrl.UUID, idx, w); err != nil {
		// The answer is cut short of its Content-Length: the caller
		// sees a failed read, never a shorter export.
		s.log.Warn("model export cut short", "model", m.UUID, "err", err)
	}
}

// importModel imports the export in the body as the target of the
// migration ?migration= names. The body is bounded by MaxExportSize and
// must have the SHA-256 the request names in X-Drover-Export-SHA256 and
// be the route's model; otherwise nothing is imported.
func (s *migrationEndpoint) importModel(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("migration")
	if err := checkStepKey(r, id); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	want := r.Header.Get(api.HeaderExportSHA256)
	if b, err := hex.DecodeString(want); err != nil || len(b) != sha256.Size || want != strings.ToLower(want) {
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "header %s must be the export's SHA-256 (64 lowercase hex digits), got %q", api.HeaderExportSHA256, want))
		return
	}
	var buf bytes.Buffer
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(&buf, h), http.MaxBytesReader(w, r.Body, s.cfg.MaxExportSize)); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			reply.WriteError(w, r, api.Errorf(api.CodeTooLarge, "the export is over this controller's limit of %d bytes: nothing was imported", s.cfg.MaxExportSize))
			return
		}
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "reading the export: %v", err))
		return
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "the export received has SHA-256 %s, not the %s the request names: nothing was imported", got, want))
		return
	}
	rows, err := state.ReadModelExport(bytes.NewReader(buf.Bytes()))
	if err != nil {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "%v", err))
		return
	}
	if rows.Model.UUID != modelOf(r) {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "the export is of model %s, not of %s: nothing was imported", rows.Model.UUID, modelOf(r)))
		return
	}
	idx, err := s.propose(r, state.ImportModelType, &state.ImportModelRequest{MigrationID: id, Export: buf.Bytes(), Now: s.now()}, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	s.answerModel(w, r, idx)
}

// checkStepKey checks a migration call's Idempotency-Key,
// "<migration-id>/<phase>/<attempt>", against the call's migration ID.
func checkStepKey(r *http.Request, migration string) error {
	if migration == "" || len(migration) > 64 || strings.Contains(migration, "/") {
		return api.Errorf(api.CodeInvalid, "a migration ID of 1 to 64 characters without '/' is required, got %q", migration)
	}
	key := r.Header.Get(api.HeaderIdempotencyKey)
	if key == "" {
		return api.Errorf(api.CodeBadRequest, "header %s is required: <migration-id>/<phase>/<attempt>", api.HeaderIdempotencyKey)
	}
	parts := strings.Split(key, "/")
	if len(parts) != 3 || parts[1] == "" {
		return api.Errorf(api.CodeBadRequest, "header %s %q is not <migration-id>/<phase>/<attempt>", api.HeaderIdempotencyKey, key)
	}
	if _, err := strconv.ParseUint(parts[2], 10, 32); err != nil {
		return api.Errorf(api.CodeBadRequest, "header %s %q: the attempt must be a number (0 and up)", api.HeaderIdempotencyKey, key)
	}
	if parts[0] != migration {
		return api.Errorf(api.CodeInvalid, "header %s %q is for migration %q, not %q", api.HeaderIdempotencyKey, key, parts[0], migration)
	}
	return nil
}

// countWriter counts what is written to it.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
