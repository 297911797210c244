package apiserver

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

func (s *machineEndpoint) listMachines(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	list, err := snap.ListMachines(modelOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, nonNil(list))
}

func (s *machineEndpoint) getMachine(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	m, err := lookup.Machine(snap, modelOf(r), chi.URLParam(r, "id"))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, m)
}

// addMachines adds empty machines, one command each (as juju add-machine
// -n): the provisioner starts them, and deploy --to or add-unit --to puts
// units on them.
func (s *machineEndpoint) addMachines(w http.ResponseWriter, r *http.Request) {
	var req api.AddMachinesRequest
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	n := req.NumMachines
	if n == 0 {
		n = 1
	}
	if n < 0 || n > maxAddMachines {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "num-machines %d: want 1 to %d", req.NumMachines, maxAddMachines))
		return
	}
	cons, err := api.ParseConstraints(req.Constraints)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	out := make([]*api.Machine, 0, n)
	var idx uint64
	for range n {
		var mc api.Machine
		i, err := s.propose(r, state.AddMachineType, &state.AddMachineRequest{ModelUUID: modelOf(r), Base: req.Base, Constraints: cons}, &mc)
		if err != nil {
			reply.WriteError(w, r, err)
			return
		}
		out, idx = append(out, &mc), i
	}
	reply.Indexed(w, http.StatusCreated, idx, out)
}

func (s *machineEndpoint) removeMachine(w http.ResponseWriter, r *http.Request) {
	force, ok := boolParam(w, r, "force")
	if !ok {
		return
	}
	idx, err := s.propose(r, state.DestroyMachineType, &state.DestroyMachineRequest{ModelUUID: modelOf(r), ID: chi.URLParam(r, "id"), Force: force}, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	w.Header().Set(api.HeaderIndex, itoa(idx))
	w.WriteHeader(http.StatusAccepted)
}
