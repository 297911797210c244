package apiserver

import (
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/reply"
)

func (s *peerEndpoint) internalApply(w http.ResponseWriter, r *http.Request) {
	cmd, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
	if err != nil {
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "read command: %v", err))
		return
	}
	val, idx, err := s.b.ForwardedApply(r.Context(), cmd)
	out := peer.ApplyResponse{Index: idx, Value: val}
	if err != nil {
		out.Error = reply.APIError(err)
	}
	reply.JSON(w, http.StatusOK, out)
}

func (s *peerEndpoint) internalReadIndex(w http.ResponseWriter, r *http.Request) {
	idx, err := s.b.ForwardedReadIndex(r.Context())
	out := peer.ReadIndexResponse{Index: idx}
	if err != nil {
		out.Error = reply.APIError(err)
	}
	reply.JSON(w, http.StatusOK, out)
}

func (s *peerEndpoint) internalApplied(w http.ResponseWriter, r *http.Request) {
	idx, err := s.b.WaitRead(r.Context(), 0, false) // waits for nothing
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, peer.AppliedResponse{Index: idx})
}

func (s *peerEndpoint) internalAddVoter(w http.ResponseWriter, r *http.Request) {
	var req peer.AddVoterRequest
	if err := reply.Decode(w, r, 1<<20, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if req.NodeID == "" || req.RaftAddr == "" || req.APIAddr == "" {
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "node-id, raft-address and api-address are required"))
		return
	}
	// The caller must be the node it asks to add.
	if cn := r.TLS.PeerCertificates[0].Subject.CommonName; cn != req.NodeID {
		reply.WriteError(w, r, api.Errorf(api.CodeForbidden, "node %s cannot add node %s", cn, req.NodeID))
		return
	}
	if err := s.b.AddVoter(r.Context(), req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, struct{}{})
}

func (s *peerEndpoint) getCA(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.Write(s.b.CACert())
}

// getIdentity answers without authentication what a hub needs to register
// the controller before trust exists: its UUID (the audience of the hub's
// tokens), name and addresses. The CA is public already (getCA).
func (s *peerEndpoint) getIdentity(w http.ResponseWriter, r *http.Request) {
	info, err := s.b.ControllerInfo(r.Context())
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, api.ControllerIdentity{UUID: info.UUID, Name: info.Name, APIAddresses: info.APIAddresses})
}

func (s *peerEndpoint) admit(w http.ResponseWriter, r *http.Request) {
	var req peer.AdmitRequest
	if err := reply.Decode(w, r, 1<<20, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	resp, err := s.b.Admit(r.Context(), req, r.RemoteAddr)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, resp)
}

func (s *peerEndpoint) internalGetBlob(w http.ResponseWriter, r *http.Request) {
	f, err := s.b.Blobs().Open(chi.URLParam(r, "sha"))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/zip")
	io.Copy(w, f)
}

func (s *peerEndpoint) internalPutBlob(w http.ResponseWriter, r *http.Request) {
	if _, _, err := s.b.Blobs().Put(r.Body, chi.URLParam(r, "sha")); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
