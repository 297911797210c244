package apiserver

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

func itoa(i uint64) string { return strconv.FormatUint(i, 10) }

// unitOf returns "app/n" from the route, checking n is a number.
func unitOf(r *http.Request) (string, error) {
	app, n := chi.URLParam(r, "app"), chi.URLParam(r, "n")
	if _, err := strconv.Atoi(n); err != nil {
		return "", api.Errorf(api.CodeBadRequest, "bad unit name %q: want application/number", app+"/"+n)
	}
	return app + "/" + n, nil
}

func (s *unitEndpoint) listUnits(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	var list []*api.Unit
	var err error
	if app := r.URL.Query().Get("application"); app != "" {
		list, err = snap.UnitsByApplication(modelOf(r), app)
	} else {
		list, err = snap.ListUnits(modelOf(r))
	}
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, nonNil(list))
}

func (s *unitEndpoint) getUnit(w http.ResponseWriter, r *http.Request) {
	s.unitRead(w, r, func(snap *state.Snapshot, model, unit string) (any, error) { return lookup.Unit(snap, model, unit) })
}

// unitRead answers a read of the unit the path names with what show
// reads of it.
func (s *unitEndpoint) unitRead(w http.ResponseWriter, r *http.Request, show func(snap *state.Snapshot, model, unit string) (any, error)) {
	name, err := unitOf(r)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	v, err := show(snap, modelOf(r), name)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, v)
}

func (s *unitEndpoint) removeUnit(w http.ResponseWriter, r *http.Request) {
	name, err := unitOf(r)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	force, ok := boolParam(w, r, "force")
	if !ok {
		return
	}
	idx, err := s.propose(r, state.DestroyUnitsType, &state.DestroyUnitsRequest{ModelUUID: modelOf(r), Units: []string{name}, Force: force}, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	w.Header().Set(api.HeaderIndex, itoa(idx))
	w.WriteHeader(http.StatusAccepted)
}

func (s *unitEndpoint) resolved(w http.ResponseWriter, r *http.Request) {
	name, err := unitOf(r)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	var req api.ResolvedRequest
	if r.ContentLength != 0 {
		if err := reply.Decode(w, r, s.cfg.MaxBodySize, &req); err != nil {
			reply.WriteError(w, r, err)
			return
		}
	}
	mode := "retry"
	if req.NoRetry {
		mode = "no-retry"
	}
	var u api.Unit
	idx, err := s.propose(r, state.SetResolvedType, &state.SetResolvedRequest{ModelUUID: modelOf(r), Unit: name, Mode: mode}, &u)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, idx, &u)
}

// maxAddMachines bounds one add-machine request.
const maxAddMachines = 100
