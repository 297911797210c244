package apiserver

import (
	"net/http"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

func (s *controllerEndpoint) getController(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := s.read(w, r); !ok {
		return
	}
	info, err := s.b.ControllerProgress(r.Context())
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, info)
}

// setPlacement records the cloud and region a hub placed the controller
// in. Only a superuser (the hub registering the controller is one) may.
func (s *controllerEndpoint) setPlacement(w http.ResponseWriter, r *http.Request) {
	var req api.Placement
	if err := reply.Decode(w, r, 1<<12, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	var c api.Controller
	idx, err := s.propose(r, state.SetPlacementType, &state.SetPlacementRequest{Cloud: req.Cloud, Region: req.Region}, &c)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, idx, api.Placement{Cloud: c.Cloud, Region: c.Region})
}

func (s *controllerEndpoint) enableHA(w http.ResponseWriter, r *http.Request) {
	var req api.EnableHARequest
	if err := reply.Decode(w, r, 1<<16, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if req.Nodes == 0 {
		req.Nodes = 3
	}
	info, err := s.b.EnableHA(r.Context(), req.Nodes)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, info)
}

func (s *controllerEndpoint) createJoinToken(w http.ResponseWriter, r *http.Request) {
	var req api.JoinTokenRequest
	if r.ContentLength != 0 {
		if err := reply.Decode(w, r, 1<<16, &req); err != nil {
			reply.WriteError(w, r, err)
			return
		}
	}
	tok, err := s.b.NewJoinToken(r.Context(), req.TTL)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusCreated, tok)
}
