// Package peer is the node-to-node protocol of a controller: the wire
// types of the /v1/internal routes and the client one node uses to call
// another (forwarded raft commands and read indexes, joining, charm blob
// copies). The apiserver serves these routes; the spoke root calls them.
// Every call is authenticated by the calling node's certificate, except
// the CA fetch and admit of a joining node, which its join token covers.
package peer

import (
	"encoding/json"

	"github.com/droverhq/drover/api"
)

// CodeNotRaftLeader is the node-to-node answer of a node that is no longer
// the raft leader; the forwarding node retries elsewhere. Never sent to
// clients.
const CodeNotRaftLeader api.Code = "not-raft-leader"

// The node-to-node routes.
const (
	PathCA        = "/v1/internal/ca"
	PathAdmit     = "/v1/internal/admit"
	PathApply     = "/v1/internal/raft/apply"
	PathReadIndex = "/v1/internal/raft/read-index"
	PathApplied   = "/v1/internal/raft/applied"
	PathAddVoter  = "/v1/internal/add-voter"
	pathBlobs     = "/v1/internal/blobs/"
)

// ApplyResponse answers a forwarded raft command.
type ApplyResponse struct {
	Index uint64          `json:"index"`
	Value json.RawMessage `json:"value,omitempty"`
	Error *api.Error      `json:"error,omitempty"`
}

// AppliedResponse is the index of the last command a node has applied.
type AppliedResponse struct {
	Index uint64 `json:"index"`
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
