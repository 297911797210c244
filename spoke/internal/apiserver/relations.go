package apiserver

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

func (s *relationEndpoint) listRelations(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	list, err := snap.ListRelations(modelOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, nonNil(list))
}

func (s *relationEndpoint) integrate(w http.ResponseWriter, r *http.Request) {
	var req api.IntegrateRequest
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	for _, e := range req.Endpoints {
		if e == "" || strings.Count(e, ":") > 1 {
			reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "bad endpoint %q: want application or application:endpoint", e))
			return
		}
	}
	var rel api.Relation
	idx, err := s.propose(r, state.AddRelationType, &state.AddRelationRequest{ModelUUID: modelOf(r), Endpoints: req.Endpoints, Now: s.now()}, &rel)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusCreated, idx, &rel)
}

func (s *relationEndpoint) removeRelation(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(chi.URLParam(r, "id"))
	if err != nil {
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "bad relation id %q", chi.URLParam(r, "id")))
		return
	}
	idx, err := s.propose(r, state.DestroyRelationType, &state.DestroyRelationRequest{ModelUUID: modelOf(r), ID: id}, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	w.Header().Set(api.HeaderIndex, itoa(idx))
	w.WriteHeader(http.StatusAccepted)
}
