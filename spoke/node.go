package spoke

import (
	"net"
	"time"

	"github.com/droverhq/drover/spoke/internal/blobs"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/pki"
	"github.com/droverhq/drover/spoke/internal/state"
)

// Store is the node's local replica of the model state.
func (s *Server) Store() *state.Store { return s.fsm.Store() }

// Events is the node's event broker.
func (s *Server) Events() *state.EventBroker { return s.fsm.Events() }

// LogMark names the node's raft log entry at index in its history, if the
// log still holds it.
func (s *Server) LogMark(index uint64) (string, bool) { return s.node.LogMark(index) }

// Blobs is the node's charm blob store.
func (s *Server) Blobs() *blobs.Store { return s.blobs }

// peerClient calls other nodes with this node's certificate.
func (s *Server) peerClient() *peer.Client {
	var dial peer.DialFunc
	if s.cfg.Faults != nil {
		dial = s.cfg.Faults.DialContext(s.ident.NodeID, &net.Dialer{Timeout: 3 * time.Second})
	}
	return peer.NewClient(pki.PeerConfig(s.ca, s.cert), dial)
}
