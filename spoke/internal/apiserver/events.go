package apiserver

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/stream"
)

// events streams model summaries to the hub (api/events.go): a reset frame
// when the caller has no usable index, then one frame per batch of changes
// naming the summaries of the models it touched, and keepalives.
func (s *eventEndpoint) events(w http.ResponseWriter, r *http.Request) {
	since, ok := s.since(w, r)
	if !ok {
		return
	}
	conn, err := upgradeStream(w, r)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer conn.Close()
	go func() { // reader pump: notices the client going away
		defer cancel()
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := s.streamSummaries(ctx, conn, since); err != nil && ctx.Err() == nil {
		s.log.Debug("event stream ended", "err", err)
	}
}

func (s *eventEndpoint) streamSummaries(ctx context.Context, conn *websocket.Conn, since uint64) error {
	send := func(f *api.EventFrame) error {
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		return conn.WriteJSON(f)
	}
	// sent is the controller summary the stream last sent (nil: none).
	var sent *api.ControllerSummary
	// changed is the controller's summary when it differs from the one
	// sent (nil otherwise, and when it cannot be told, which the next
	// check tries again).
	changed := func() *api.ControllerSummary {
		sum, err := s.controllerSummary(ctx)
		if err != nil {
			s.log.Debug("event stream: controller summary", "err", err)
			return nil
		}
		if sum.SameHealth(sent) {
			return nil
		}
		return sum
	}
	reset := func() (uint64, error) {
		snap := s.b.Store().Snapshot()
		idx, err := snap.LatestIndex()
		if err != nil {
			return 0, err
		}
		models, err := snap.ListModels()
		if err != nil {
			return 0, err
		}
		addrs, err := nodeAddresses(snap)
		if err != nil {
			return 0, err
		}
		sent = nil // a reset replaces all the consumer knew
		f := &api.EventFrame{Type: api.EventFrameReset, Index: idx, Models: []api.ModelSummary{}, APIAddresses: addrs, Mark: s.mark(idx),
			Controller: changed()}
		sent = f.Controller
		for _, m := range models {
			if !m.Importing() && !state.MigratedAway(m) {
				f.Models = append(f.Models, summarize(snap, m))
			}
		}
		return idx, send(f)
	}
	return s.follow(ctx, since, follower{
		reset: reset,
		keepalive: func(idx uint64) error {
			return send(&api.EventFrame{Type: api.EventFrameKeepalive, Index: idx, Mark: s.mark(idx)})
		},
		// Leadership and reachability change no state the stream
		// follows: they are looked for every healthInterval.
		pollEvery: s.healthInterval(),
		poll: func(idx uint64) (bool, error) {
			sum := changed()
			if sum == nil {
				return false, nil
			}
			sent = sum
			return true, send(&api.EventFrame{Type: api.EventFrameModels, Index: idx, Mark: s.mark(idx), Controller: sum})
		},
		events: func(idx uint64, evs []stream.Event) (bool, error) {
			var touched []string
			// removed are the models whose record these events delete,
			// but for an aborted import (the hub never heard of it here)
			// and a reaped model (the hub indexes it on its target).
			var removed []string
			nodes := false
			for _, ev := range evs {
				if ev.ModelUUID != "" && !slices.Contains(touched, ev.ModelUUID) && summaryKinds[ev.Kind] {
					touched = append(touched, ev.ModelUUID)
				}
				if m, ok := ev.Object.(*api.Model); ok && ev.Op == stream.OpDelete && !m.Importing() && !state.MigratedAway(m) {
					removed = append(removed, m.UUID)
				}
				nodes = nodes || ev.Kind == state.KindControllerNode
			}
			if len(touched) == 0 && !nodes {
				return false, nil
			}
			snap := s.b.Store().Snapshot()
			f := &api.EventFrame{Type: api.EventFrameModels, Index: idx, Mark: s.mark(idx)}
			if nodes {
				addrs, err := nodeAddresses(snap)
				if err != nil {
					return false, err
				}
				f.APIAddresses = addrs
				if f.Controller = changed(); f.Controller != nil {
					sent = f.Controller
				}
			}
			for _, id := range touched {
				m, err := snap.ModelByUUID(id)
				switch {
				case err != nil || (m == nil && slices.Contains(removed, id)):
					f.Removed = append(f.Removed, id)
				case m == nil:
					// Removed by a later command, whose events say so
					// (the snapshot is newer than these events), or an
					// aborted import.
				case m.Importing():
					// An import's events are the hub's to learn of at
					// activation, whose model event summarizes it.
				case state.MigratedAway(m):
					// From SUCCESS on the hub indexes the model on its
					// target: a summary from here would name two
					// controllers.
				default:
					f.Models = append(f.Models, summarize(snap, m))
				}
			}
			if len(f.Models) == 0 && len(f.Removed) == 0 && !nodes {
				return false, nil
			}
			return true, send(f)
		},
	})
}

// controllerSummary is the controller's version and nodes as GET
// /v1/controller answers them.
func (s *eventEndpoint) controllerSummary(ctx context.Context) (*api.ControllerSummary, error) {
	info, err := s.b.ControllerProgress(ctx)
	if err != nil {
		return nil, err
	}
	return &api.ControllerSummary{Version: info.Version, Nodes: info.Nodes}, nil
}

// nodeAddresses lists the API address of every node of the controller
// (by node ID), for the hub to reach it through any of them.
func nodeAddresses(snap *state.Snapshot) ([]string, error) {
	nodes, err := snap.ListControllerNodes()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes {
		if n.APIAddr != "" {
			out = append(out, n.APIAddr)
		}
	}
	return out, nil
}

// summaryKinds are the event kinds that can change a model's summary.
var summaryKinds = map[string]bool{state.KindModel: true, state.KindApplication: true, state.KindUnit: true,
	state.KindMachine: true}

// statusRank orders workload statuses from best to worst; a model's status
// is its worst unit's.
var statusRank = map[string]int{"": 0, "unknown": 1, "active": 2, "maintenance": 3, "waiting": 4, "blocked": 5, "error": 6}

func summarize(snap *state.Snapshot, m *api.Model) api.ModelSummary {
	sum := api.ModelSummary{UUID: m.UUID, Name: m.Name, Owner: m.Owner, Life: m.Life, Status: "available", CreatedAt: m.CreatedAt}
	apps, _ := snap.ListApplications(m.UUID)
	units, _ := snap.ListUnits(m.UUID)
	machines, _ := snap.ListMachines(m.UUID)
	sum.ApplicationCount, sum.UnitCount, sum.MachineCount = len(apps), len(units), len(machines)
	// One entry an application, in name order, for the hub's compliance
	// views: an application event (deploy, refresh) or a unit event
	// (scale) summarizes the model again (summaryKinds).
	perApp := map[string]int{}
	for _, u := range units {
		perApp[u.Application]++
	}
	for _, a := range apps {
		sum.Charms = append(sum.Charms, api.CharmInUse{Application: a.Name, Charm: a.CharmName, Revision: a.CharmRevision,
			SHA256: a.CharmSHA256, Units: perApp[a.Name]})
	}
	slices.SortFunc(sum.Charms, func(a, b api.CharmInUse) int { return strings.Compare(a.Application, b.Application) })
	worst := ""
	for _, u := range units {
		st := u.WorkloadStatus.Status
		if u.AgentStatus.Status == "error" {
			st = "error"
		}
		if statusRank[st] > statusRank[worst] {
			worst = st
		}
	}
	if worst != "" {
		sum.Status = worst
	}
	return sum
}
