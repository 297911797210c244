package spoke

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
)

// progressWait bounds how long ControllerProgress waits for a node's
// answer.
const progressWait = time.Second

// ControllerProgress is ControllerInfo with every node's applied index,
// asked of each node, and its lag behind the leader's.
func (s *Server) ControllerProgress(ctx context.Context) (*api.ControllerInfo, error) {
	info, err := s.ControllerInfo(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, progressWait)
	defer cancel()
	var g errgroup.Group
	for i := range info.Nodes {
		n := &info.Nodes[i]
		if n.ID == s.ident.NodeID {
			n.AppliedIndex = s.node.AppliedIndex()
			continue
		}
		g.Go(func() error {
			idx, err := s.peers.Applied(ctx, n.APIAddress)
			n.AppliedIndex, n.Unreachable = idx, err != nil
			return nil // an unreachable node is shown as such
		})
	}
	_ = g.Wait() // every function answers nil
	var leader uint64
	for _, n := range info.Nodes {
		if n.Leader {
			leader = n.AppliedIndex
		}
	}
	for i := range info.Nodes {
		if n := &info.Nodes[i]; !n.Unreachable && n.AppliedIndex < leader {
			n.Lag = leader - n.AppliedIndex
		}
	}
	return info, nil
}
