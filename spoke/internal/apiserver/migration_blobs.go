package apiserver

import (
	"errors"
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/blobs"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

// A migration carries the model's rows in its export and the content
// they name — charm archives and resource content, by SHA-256 — beside
// it: the target lists what it lacks once it imported the rows, the driver
// reads each from the source and puts it on the target, which checks the
// hash and stores it on a quorum of its nodes as an upload would.

// modelBlobs are the blobs the model's rows name: its applications'
// charm archives and its resources' content, sorted, each once.
func modelBlobs(snap *state.Snapshot, model string) ([]string, error) {
	var out []string
	add := func(sha string) {
		if sha != "" && !slices.Contains(out, sha) {
			out = append(out, sha)
		}
	}
	apps, err := snap.ListApplications(model)
	if err != nil {
		return nil, err
	}
	for _, a := range apps {
		add(a.CharmSHA256)
		res, err := snap.ResourcesByApplication(model, a.Name)
		if err != nil {
			return nil, err
		}
		for _, r := range res {
			add(r.SHA256)
		}
	}
	slices.Sort(out)
	return out, nil
}

// missingBlobs answers the blobs the model names that this node lacks.
func (s *migrationEndpoint) missingBlobs(w http.ResponseWriter, r *http.Request) {
	idx, shas, ok := s.namedBlobs(w, r)
	if !ok {
		return
	}
	missing := []string{}
	for _, sha := range shas {
		if !s.b.Blobs().Has(sha) {
			missing = append(missing, sha)
		}
	}
	reply.Indexed(w, http.StatusOK, idx, api.MigrationBlobs{Missing: missing})
}

// namedBlobs reads the model's blobs at a consistent read index (the model
// may be one being imported). On false it has answered.
func (s *migrationEndpoint) namedBlobs(w http.ResponseWriter, r *http.Request) (uint64, []string, bool) {
	if err := checkMigrationID(r.URL.Query().Get("migration")); err != nil {
		reply.WriteError(w, r, err)
		return 0, nil, false
	}
	idx, err := s.b.WaitRead(r.Context(), 0, true)
	if err != nil {
		reply.WriteError(w, r, err)
		return 0, nil, false
	}
	snap := s.b.Store().Snapshot()
	if _, err := lookup.Model(snap, modelOf(r)); err != nil {
		reply.WriteError(w, r, err)
		return 0, nil, false
	}
	shas, err := modelBlobs(snap, modelOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return 0, nil, false
	}
	return idx, shas, true
}

// namedBlob is the route's {sha256} if the model names it. On false it
// has answered.
func (s *migrationEndpoint) namedBlob(w http.ResponseWriter, r *http.Request) (string, bool) {
	_, shas, ok := s.namedBlobs(w, r)
	if !ok {
		return "", false
	}
	sha := chi.URLParam(r, "sha256")
	if !slices.Contains(shas, sha) {
		reply.WriteError(w, r, api.Errorf(api.CodeNotFound, "model %s names no charm archive or resource content %q", modelOf(r), sha))
		return "", false
	}
	return sha, true
}

// getBlob sends one blob the model names (and no other).
func (s *migrationEndpoint) getBlob(w http.ResponseWriter, r *http.Request) {
	sha, ok := s.namedBlob(w, r)
	if !ok {
		return
	}
	s.sendBlob(w, r, sha, func(h http.Header) { h.Set("Content-Type", "application/octet-stream") })
}

// putBlob stores one blob the model names, checking its content hashes to
// the name, on a quorum of this controller's nodes. Putting it again is a
// no-op.
func (s *migrationEndpoint) putBlob(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("migration")
	if err := checkStepKey(r, id); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	sha, ok := s.namedBlob(w, r)
	if !ok {
		return
	}
	staged, err := s.b.Blobs().Stage(http.MaxBytesReader(w, r.Body, s.cfg.MaxCharmSize))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) || errors.Is(err, blobs.ErrTooLarge) {
			reply.WriteError(w, r, api.Errorf(api.CodeTooLarge, "blob %s is over %d bytes", sha, s.cfg.MaxCharmSize))
			return
		}
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "read blob %s: %v", sha, err))
		return
	}
	defer staged.Discard()
	if staged.SHA256 != sha {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "the content received has SHA-256 %s, not %s: nothing was stored", staged.SHA256, sha))
		return
	}
	if err := staged.Commit(); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if err := s.b.ReplicateBlob(r.Context(), sha); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
