package spoke

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/supervise"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/provider/local"
)

// runWorkers runs the node's long-lived workers; each is Run(ctx) error and
// restarts with backoff after a failure until ctx ends.
func (s *Server) runWorkers(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return s.supervise(ctx, "join", func(ctx context.Context) error {
			if err := s.completeJoinAndRegister(ctx); err != nil {
				return err
			}
			return s.applyHubFlags(ctx)
		})
	})
	g.Go(func() error { return s.supervise(ctx, "leadership", s.runLeadership) })
	g.Go(func() error { return s.supervise(ctx, "blob-sync", s.runBlobSync) })
	g.Go(func() error { return s.supervise(ctx, "agent-hub", s.api.RunAgentHub) })
	return g.Wait()
}

// supervise reruns fn with backoff until it returns nil or ctx ends. It
// returns nil either way: a worker's failure is logged and retried, never
// handed to the errgroup, which would stop the node's other workers.
func (s *Server) supervise(ctx context.Context, name string, fn func(context.Context) error) error {
	_ = supervise.Run(ctx, supervise.Config{Name: name, Logger: s.logger, Min: workerBackoffMin, Max: workerBackoffMax}, fn)
	return nil
}

// The pause before a failed worker is started again, doubling from min to
// max.
const (
	workerBackoffMin = 100 * time.Millisecond
	workerBackoffMax = 10 * time.Second
)

// completeJoinAndRegister makes sure this node is a member and that the
// replicated node record carries its current addresses (they may change
// across restarts), so clients and agents learn every address.
func (s *Server) completeJoinAndRegister(ctx context.Context) error {
	if err := s.completeJoin(ctx); err != nil {
		return err
	}
	if _, err := ReadAdminCredential(s.cfg.DataDir); err == nil {
		// This node bootstrapped the controller.
		if err := s.ensureBootstrapped(ctx); err != nil {
			return err
		}
	}
	want := api.ControllerNode{ID: s.ident.NodeID, RaftAddr: s.cfg.RaftListen, APIAddr: s.cfg.Advertise, Voter: true}
	for {
		if _, err := s.WaitRead(ctx, 0, true); err != nil {
			return err
		}
		nodes, err := s.Store().Snapshot().ListControllerNodes()
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.ID == want.ID && n.RaftAddr == want.RaftAddr && n.APIAddr == want.APIAddr {
				return nil
			}
		}
		if _, _, err := s.Propose(ctx, state.UpsertControllerNodeType, &state.UpsertControllerNodeRequest{Node: want}); err != nil {
			return err
		}
	}
}

// ensureBootstrapped records the controller, the bootstrap node and the
// admin user once, on the node that bootstrapped the controller.
func (s *Server) ensureBootstrapped(ctx context.Context) error {
	if _, err := s.WaitRead(ctx, 0, true); err != nil {
		return err
	}
	snap := s.Store().Snapshot()
	if ctl, err := snap.Controller(); err != nil || ctl != nil {
		return err
	}
	cred, err := ReadAdminCredential(s.cfg.DataDir)
	if err != nil {
		return err
	}
	if _, _, err := s.Propose(ctx, state.ControllerInitType, &state.ControllerInitRequest{
		UUID: s.ident.ControllerUUID, Name: s.ident.ControllerName, CACert: string(s.ca.CertPEM),
	}); err != nil {
		return err
	}
	_, _, err = s.Propose(ctx, state.UpsertUserType, &state.UpsertUserRequest{
		User:         api.User{Name: cred.User, Access: "superuser", CreatedAt: s.cfg.Now().UTC()},
		PasswordHash: HashSecret(cred.Password),
	})
	return err
}

// runLeadership starts the leader-only workers when this node becomes
// leader (after a barrier, so it sees all committed state) and stops them
// when it loses leadership.
func (s *Server) runLeadership(ctx context.Context) error {
	var session *leaderRun
	defer func() { session.stop() }()
	check := time.NewTicker(time.Second)
	defer check.Stop()
	for {
		leading := s.node.IsLeader()
		switch {
		case leading && session == nil:
			session = s.startLeaderSession(ctx)
		case !leading && session != nil:
			session.stop()
			session = nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.node.LeaderCh():
		case <-check.C:
		}
	}
}

// leaderRun is one term of leadership's workers.
type leaderRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *Server) startLeaderSession(ctx context.Context) *leaderRun {
	lctx, cancel := context.WithCancel(ctx)
	run := &leaderRun{cancel: cancel, done: make(chan struct{})}
	go func() { // joined by stop()
		defer close(run.done)
		s.leaderSession(lctx)
	}()
	return run
}

func (r *leaderRun) stop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

func (s *Server) leaderSession(ctx context.Context) {
	if err := s.node.Barrier(ctx); err != nil {
		return
	}
	s.logger.Info("leader workers started")
	defer s.logger.Info("leader workers stopped")
	g, ctx := errgroup.WithContext(ctx)
	if !s.cfg.NoProvisioner {
		g.Go(func() error { return s.supervise(ctx, "local-provisioner", s.runProvisioner) })
	}
	g.Go(func() error {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			s.expireLeases(ctx)
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	})
	g.Wait()
}

// runProvisioner runs the local substrate's provisioner.
func (s *Server) runProvisioner(ctx context.Context) error {
	p, err := local.New(local.Config{
		Store: s.Store(), Events: s.Events(), Propose: s.Propose, Dir: s.cfg.MachineDir,
		AgentBinary: s.cfg.AgentBinary, CACert: s.CACert(), Logger: s.logger.With("worker", "local-provisioner"),
		ControllerUUID: s.ident.ControllerUUID,
		Now:            s.cfg.Now,
	})
	if err != nil {
		return err
	}
	return p.Run(ctx)
}

// SetAgentSecret sets the credential a machine agent authenticates with
// (tag "machine-<model>-<id>"). The local provisioner does this itself;
// other provisioners and tools (benchmarks) call it.
func (s *Server) SetAgentSecret(ctx context.Context, model, machine, secret string) error {
	_, _, err := s.Propose(ctx, state.SetCredentialType, &state.SetCredentialRequest{
		Credential: api.Credential{Tag: local.Tag(model, machine), ModelUUID: model, Hash: HashSecret(secret)}})
	return err
}

// SetMachineProvider records a machine as provisioned outside Drover's
// provisioners (a manual machine), under providerID: benchmarks whose
// agents are simulated call it, since a migration's precheck refuses a
// model with an unprovisioned machine.
func (s *Server) SetMachineProvider(ctx context.Context, model, machine, providerID string) error {
	_, _, err := s.Propose(ctx, state.SetMachineProvisionedType, &state.SetMachineProvisionedRequest{
		ModelUUID: model, ID: machine, ProviderID: providerID})
	return err
}

// AgentConnections is the number of agent streams this node serves.
func (s *Server) AgentConnections() int { return s.api.AgentConnections() }

// expireLeases clears leadership leases whose holder stopped renewing.
func (s *Server) expireLeases(ctx context.Context) {
	now := s.cfg.Now()
	snap := s.Store().Snapshot()
	models, err := snap.ListModels()
	if err != nil {
		return
	}
	for _, m := range models {
		apps, _ := snap.ListApplications(m.UUID)
		for _, a := range apps {
			l, err := snap.LeaseByApp(m.UUID, a.Name)
			if err == nil && l != nil && l.Holder != "" && now.After(l.Expiry) {
				if _, _, err := s.Propose(ctx, state.ExpireLeasesType, &state.ExpireLeasesRequest{Now: now}); err != nil {
					s.logger.Warn("expire leases", "err", err)
				}
				return
			}
		}
	}
}
