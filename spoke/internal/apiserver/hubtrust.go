package apiserver

import (
	"net/http"
	"strconv"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

// createHubToken answers POST /v1/controller/hub-tokens: a single-use
// token a hub administrator passes to `drover add-controller --join-token`.
func (s *controllerEndpoint) createHubToken(w http.ResponseWriter, r *http.Request) {
	var req api.JoinTokenRequest
	if r.ContentLength != 0 {
		if err := reply.Decode(w, r, 1<<16, &req); err != nil {
			reply.WriteError(w, r, err)
			return
		}
	}
	tok, idx, err := s.b.NewHubToken(r.Context(), req.TTL)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusCreated, idx, tok)
}

// trustHub answers POST /v1/internal/hub-trust, the call a hub makes while
// registering the controller. Only the hub token authenticates it: an
// unknown, forged or expired token is 401, a used one 403.
func (s *controllerEndpoint) trustHub(w http.ResponseWriter, r *http.Request) {
	var req api.TrustHubRequest
	if err := reply.Decode(w, r, 1<<20, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if req.Token == "" || req.HubURL == "" {
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "token and hub-url are required"))
		return
	}
	t, idx, err := s.b.TrustHub(r.Context(), req)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, idx, t)
}

// getHubTrust answers GET /v1/controller/hub: the hub the controller
// trusts, 404 when none.
func (s *controllerEndpoint) getHubTrust(w http.ResponseWriter, r *http.Request) {
	snap, idx, ok := s.read(w, r)
	if !ok {
		return
	}
	t, err := snap.HubTrust()
	if err == nil && t == nil {
		err = api.Errorf(api.CodeNotFound, "this controller trusts no hub")
	}
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, idx, t)
}

// removeHubTrust answers DELETE /v1/controller/hub: from the moment the
// command applies on a node, that node refuses the old hub's tokens.
func (s *controllerEndpoint) removeHubTrust(w http.ResponseWriter, r *http.Request) {
	idx, err := s.propose(r, state.RemoveHubTrustType, &state.RemoveHubTrustRequest{}, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	s.log.Info("controller trusts no hub any more", "by", callerOf(r.Context()).Name)
	w.Header().Set(api.HeaderIndex, strconv.FormatUint(idx, 10))
	w.WriteHeader(http.StatusNoContent)
}
