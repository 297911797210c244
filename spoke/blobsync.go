package spoke

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/blobs"
	"github.com/droverhq/drover/spoke/internal/cluster"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/stream"
)

// Charm archives live outside raft, content-addressed on every node. An
// upload is pushed to a quorum of nodes before its metadata is committed,
// so a committed charm survives the loss of any minority of nodes; the
// blob-sync worker then fills in the remaining nodes (and nodes that join
// later) from their peers.

// blobSync pushes and fetches charm archives between the nodes.
type blobSync struct {
	self   string // this node's ID
	node   *cluster.Node
	fsm    *state.FSM
	blobs  *blobs.Store
	peers  *peer.Client
	logger *slog.Logger
}

func (s *blobSync) peerAPIAddrs() []string {
	nodes, err := s.fsm.Store().Snapshot().ListControllerNodes()
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range nodes {
		if n.ID != s.self && n.APIAddr != "" {
			out = append(out, n.APIAddr)
		}
	}
	return out
}

// ReplicateBlob pushes a locally stored blob to peers until a quorum of the
// controller (this node included) holds it.
func (s *blobSync) ReplicateBlob(ctx context.Context, sha string) error {
	servers, err := s.node.Servers()
	if err != nil {
		return api.Errorf(api.CodeUnavailable, "raft configuration: %v", err)
	}
	voters := 0
	for _, sv := range servers {
		if sv.Voter {
			voters++
		}
	}
	need := voters/2 + 1 - 1 // this node has it
	if need <= 0 {
		return nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := 0
	var errs []error
	for _, addr := range s.peerAPIAddrs() {
		wg.Add(1)
		go func() { // bounded fan-out, joined below
			defer wg.Done()
			err := s.pushBlob(ctx, addr, sha)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", addr, err))
				return
			}
			got++
		}()
	}
	wg.Wait()
	if got < need {
		return api.Errorf(api.CodeUnavailable, "charm stored on %d of %d controller nodes needed: %v", got+1, need+1, errors.Join(errs...))
	}
	return nil
}

func (s *blobSync) pushBlob(ctx context.Context, addr, sha string) error {
	f, err := s.blobs.Open(sha)
	if err != nil {
		return err
	}
	defer f.Close()
	return s.peers.PutBlob(ctx, addr, sha, f)
}

// FetchBlob copies a blob this node lacks from any peer that has it.
func (s *blobSync) FetchBlob(ctx context.Context, sha string) error {
	if s.blobs.Has(sha) {
		return nil
	}
	var errs []error
	for _, addr := range s.peerAPIAddrs() {
		body, err := s.peers.GetBlob(ctx, addr, sha)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_, _, err = s.blobs.Put(body, sha)
		body.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return api.Errorf(api.CodeNotFound, "blob %s (a charm archive or resource content) is on no reachable controller node: %v", sha, errors.Join(errs...))
}

// runBlobSync fetches every charm archive this node is missing, at start
// and whenever a charm is added.
func (s *blobSync) runBlobSync(ctx context.Context) error {
	sub, err := s.fsm.Events().Subscribe(ctx, stream.SubscribeRequest{Since: s.node.AppliedIndex()})
	if err != nil {
		return err
	}
	s.syncAllBlobs(ctx)
	for {
		evs, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if sub, err = s.fsm.Events().Subscribe(ctx, stream.SubscribeRequest{Since: s.node.AppliedIndex()}); err != nil {
				return err
			}
			s.syncAllBlobs(ctx)
			continue
		}
		for _, ev := range evs {
			if ev.Kind == state.KindCharm && ev.Op == stream.OpUpsert && !s.blobs.Has(ev.Key) {
				if err := s.FetchBlob(ctx, ev.Key); err != nil {
					s.logger.Warn("charm archive not yet available", "sha256", ev.Key, "err", err)
				}
			}
		}
	}
}

func (s *blobSync) syncAllBlobs(ctx context.Context) {
	charms, err := s.fsm.Store().Snapshot().ListCharms()
	if err != nil {
		return
	}
	for _, c := range charms {
		if !s.blobs.Has(c.SHA256) {
			if err := s.FetchBlob(ctx, c.SHA256); err != nil {
				s.logger.Warn("charm archive not yet available", "sha256", c.SHA256, "err", err)
			}
		}
	}
}
