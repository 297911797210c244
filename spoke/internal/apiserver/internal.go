package apiserver

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
)

// ApplyResponse answers a forwarded raft command.
type ApplyResponse struct {
	Index uint64          `json:"index"`
	Value json.RawMessage `json:"value,omitempty"`
	Error *api.Error      `json:"error,omitempty"`
}

// ReadIndexResponse answers a forwarded read-index request.
type ReadIndexResponse struct {
	Index uint64     `json:"index"`
	Error *api.Error `json:"error,omitempty"`
}

// AdmitRequest is a joining node's first call, authenticated by the token.
type AdmitRequest struct {
	Token string   `json:"token"`
	Hosts []string `json:"hosts,omitempty"`
}

// AdmitResponse hands a joining node its identity and the controller's
// TLS material.
type AdmitResponse struct {
	NodeID         string `json:"node-id"`
	ControllerUUID string `json:"controller-uuid"`
	ControllerName string `json:"controller-name"`
	CACert         string `json:"ca-cert"`
	CAKey          string `json:"ca-key"`
	NodeCert       string `json:"node-cert"`
	NodeKey        string `json:"node-key"`
	Secret         string `json:"secret"`
}

// AddVoterRequest asks the leader to add a node as a voter.
type AddVoterRequest struct {
	NodeID   string `json:"node-id"`
	RaftAddr string `json:"raft-address"`
	APIAddr  string `json:"api-address"`
}

func (s *Server) internalApply(w http.ResponseWriter, r *http.Request) {
	cmd, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
	if err != nil {
		writeError(w, r, api.Errorf(api.CodeBadRequest, "read command: %v", err))
		return
	}
	val, idx, err := s.b.ForwardedApply(r.Context(), cmd)
	out := ApplyResponse{Index: idx, Value: val}
	if err != nil {
		out.Error = toAPIError(err)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) internalReadIndex(w http.ResponseWriter, r *http.Request) {
	idx, err := s.b.ForwardedReadIndex(r.Context())
	out := ReadIndexResponse{Index: idx}
	if err != nil {
		out.Error = toAPIError(err)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) internalAddVoter(w http.ResponseWriter, r *http.Request) {
	var req AddVoterRequest
	if err := decode(w, r, 1<<20, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if req.NodeID == "" || req.RaftAddr == "" || req.APIAddr == "" {
		writeError(w, r, api.Errorf(api.CodeBadRequest, "node-id, raft-address and api-address are required"))
		return
	}
	// The caller must be the node it asks to add.
	if cn := r.TLS.PeerCertificates[0].Subject.CommonName; cn != req.NodeID {
		writeError(w, r, api.Errorf(api.CodeForbidden, "node %s cannot add node %s", cn, req.NodeID))
		return
	}
	if err := s.b.AddVoter(r.Context(), req); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

func (s *Server) getCA(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.Write(s.b.CACert())
}

// getIdentity answers without authentication what a hub needs to register
// the controller before trust exists: its UUID (the audience of the hub's
// tokens), name and addresses. The CA is public already (getCA).
func (s *Server) getIdentity(w http.ResponseWriter, r *http.Request) {
	info, err := s.b.ControllerInfo(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ControllerIdentity{UUID: info.UUID, Name: info.Name, APIAddresses: info.APIAddresses})
}

func (s *Server) admit(w http.ResponseWriter, r *http.Request) {
	var req AdmitRequest
	if err := decode(w, r, 1<<20, &req); err != nil {
		writeError(w, r, err)
		return
	}
	resp, err := s.b.Admit(r.Context(), req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) internalGetBlob(w http.ResponseWriter, r *http.Request) {
	f, err := s.b.Blobs().Open(chi.URLParam(r, "sha"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/zip")
	io.Copy(w, f)
}

func (s *Server) internalPutBlob(w http.ResponseWriter, r *http.Request) {
	if _, _, err := s.b.Blobs().Put(r.Body, chi.URLParam(r, "sha")); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
