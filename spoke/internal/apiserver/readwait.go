package apiserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httputil"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/reply"
)

// errRelayed reports that waitRead answered the request itself, by
// relaying it to the leader.
var errRelayed = errors.New("read relayed to the raft leader")

// waitRead waits, for at most cfg.ReadWait, until the local replica may
// serve a read reflecting min (and, with consistent, every acknowledged
// write). A client never reads older than the index it names
// (read-your-writes across nodes, ADR 0028), so a node still short of it
// then relays the read to the leader, which has applied everything
// committed; the leader itself, or a node the read was relayed to, answers
// unavailable instead (the client tries another node) rather than wait
// without end for an index this controller may never reach.
func (s *base) waitRead(w http.ResponseWriter, r *http.Request, min uint64, consistent bool) (uint64, error) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ReadWait)
	defer cancel()
	at, err := s.b.WaitRead(ctx, min, consistent)
	if err == nil || r.Context().Err() != nil || ctx.Err() == nil {
		return at, err
	}
	if r.Header.Get(peer.HeaderForwardedRead) == "" && !s.b.IsLeader() {
		if addr, aerr := s.b.LeaderAPIAddr(); aerr == nil {
			s.relayRead(w, r, addr)
			return 0, errRelayed
		}
	}
	applied, _ := s.b.WaitRead(r.Context(), 0, false) // waits for nothing
	if s.b.IsLeader() {
		// The leader has applied every command committed: an index
		// beyond it is not this controller's history (a client that
		// kept it while the controller was restored from a backup).
		return 0, api.Errorf(api.CodeUnavailable,
			"raft index %d is ahead of this controller (its leader is at %d); if the controller was restored from a backup, remove its entry from indexes.yaml in the client store",
			min, applied)
	}
	return 0, api.Errorf(api.CodeUnavailable,
		"controller node %s has not reached raft index %d in %s (it is at %d); try another node",
		s.b.NodeID(), min, s.cfg.ReadWait, applied)
}

// relayRead hands the request, with its credentials, to the leader at addr
// and copies the answer back as it comes (a watch streams on). The leader
// authenticates the caller again and serves the read from its replica.
func (s *base) relayRead(w http.ResponseWriter, r *http.Request, addr string) {
	s.log.Debug("read relayed to the raft leader", "path", r.URL.Path, "leader", addr)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "https"
			pr.Out.URL.Host = addr
			pr.Out.Host = addr
			pr.Out.Header.Set(peer.HeaderForwardedRead, "1")
		},
		Transport:     s.b.PeerTransport(),
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			reply.WriteError(w, r, api.Errorf(api.CodeUnavailable,
				"this controller node lags, and relaying the read to the raft leader at %s failed: %v; try another node", addr, err))
		},
	}
	rp.ServeHTTP(w, r)
}
