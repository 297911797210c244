package apiserver

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

// read prepares a read as the query asks (?index=N, ?consistent=true) and
// returns a snapshot of the local replica and the index it reflects.
func (s *base) read(w http.ResponseWriter, r *http.Request) (*state.Snapshot, uint64, bool) {
	q := r.URL.Query()
	min, err := reply.UintParam(r, "index", "want a raft index (an unsigned integer)")
	if err != nil {
		reply.WriteError(w, r, err)
		return nil, 0, false
	}
	consistent := false
	if v := q.Get("consistent"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			reply.WriteError(w, r, reply.BadParam("consistent", v, "want true or false"))
			return nil, 0, false
		}
		consistent = b
	}
	at, err := s.b.WaitRead(r.Context(), min, consistent)
	if err != nil {
		reply.WriteError(w, r, err)
		return nil, 0, false
	}
	return s.b.Store().Snapshot(), at, true
}

// propose replicates a command and decodes its value into out (if not nil).
func (s *base) propose(r *http.Request, t state.MessageType, req, out any) (uint64, error) {
	val, idx, err := s.b.Propose(r.Context(), t, req)
	if err != nil {
		return idx, err
	}
	if out != nil && val != nil {
		if err := peer.AssignValue(val, out); err != nil {
			return idx, err
		}
	}
	return idx, nil
}

func (s *base) now() time.Time { return s.cfg.Now().UTC() }

func modelOf(r *http.Request) string { return chi.URLParam(r, "model") }

func (s *base) modelCtx(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := modelOf(r); m == "" || len(m) > 64 {
			reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "bad model UUID %q", m))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func boolParam(w http.ResponseWriter, r *http.Request, name string) (bool, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, true
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		reply.WriteError(w, r, reply.BadParam(name, v, "want true or false"))
		return false, false
	}
	return b, true
}

func (s *controllerEndpoint) getController(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := s.read(w, r); !ok {
		return
	}
	info, err := s.b.ControllerInfo(r.Context())
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
	tok, err := s.b.NewJoinToken(req.TTL)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusCreated, tok)
}
