package apiserver

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"

	"github.com/droverhq/drover/spoke/internal/agentgw"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/status"
)

// base is what every endpoint shares: the node it serves, the server's
// configuration and lifetime, and the read, write and stream steps every
// handler takes (below, and follow.go).
type base struct {
	cfg Config
	b   Backend
	log *slog.Logger
	// marks remembers the last log entries' marks: every watch and the
	// hub's stream name the same indexes, one frame each.
	marks markCache
	// closing is closed by Server.Close: long-lived streams end.
	closing chan struct{}
}

// endpoints are the handlers of the API by resource; Server.routes wires
// them to their routes.
type endpoints struct {
	controller   *controllerEndpoint
	peers        *peerEndpoint
	models       *modelEndpoint
	applications *applicationEndpoint
	units        *unitEndpoint
	machines     *machineEndpoint
	relations    *relationEndpoint
	actions      *actionEndpoint
	charms       *charmEndpoint
	status       *statusEndpoint
	events       *eventEndpoint
	logs         *logEndpoint
	migrations   *migrationEndpoint
}

func newEndpoints(b *base, charms *charmCache, logs *logBook, agents *agentgw.Gateway) endpoints {
	return endpoints{
		controller:   &controllerEndpoint{b},
		peers:        &peerEndpoint{b},
		models:       &modelEndpoint{b},
		applications: &applicationEndpoint{base: b, charms: charms},
		units:        &unitEndpoint{b},
		machines:     &machineEndpoint{b},
		relations:    &relationEndpoint{b},
		actions:      &actionEndpoint{base: b, charms: charms},
		charms:       &charmEndpoint{base: b, charms: charms, agents: agents, uploads: make(chan struct{}, maxCharmUploads)},
		status:       &statusEndpoint{base: b, epoch: status.NewEpoch()},
		events:       &eventEndpoint{b},
		logs:         &logEndpoint{base: b, book: logs},
		migrations:   &migrationEndpoint{base: b, book: logs},
	}
}

// controllerEndpoint serves /v1/controller: the controller's record and
// placement, HA, join tokens and the hub it trusts.
type controllerEndpoint struct{ *base }

// peerEndpoint serves /v1/internal, the node-to-node routes
// (spoke/internal/peer).
type peerEndpoint struct{ *base }

// modelEndpoint serves /v1/models and a model's record, config and
// status history.
type modelEndpoint struct{ *base }

// applicationEndpoint serves a model's applications.
type applicationEndpoint struct {
	*base
	charms *charmCache
}

// unitEndpoint serves a model's units.
type unitEndpoint struct{ *base }

// machineEndpoint serves a model's machines.
type machineEndpoint struct{ *base }

// relationEndpoint serves a model's relations.
type relationEndpoint struct{ *base }

// actionEndpoint serves a model's actions and tasks.
type actionEndpoint struct {
	*base
	charms *charmCache
}

// charmEndpoint serves charm uploads and downloads, to users and to
// machine agents.
type charmEndpoint struct {
	*base
	charms  *charmCache
	agents  *agentgw.Gateway
	uploads chan struct{} // a slot per upload in progress (maxCharmUploads)
}

// statusEndpoint serves a model's status and its watch.
type statusEndpoint struct {
	*base
	// epoch names this server's lifetime in status ETags (status.NewEpoch).
	epoch string
}

// eventEndpoint serves the controller's event stream (/v1/events).
type eventEndpoint struct{ *base }

// logEndpoint serves a model's debug log.
type logEndpoint struct {
	*base
	book *logBook
}

// read prepares a read as the query asks (?index=N, ?consistent=true) and
// returns a snapshot of the local replica and the index it reflects. A
// node that cannot reach the index in time relays the read to the leader
// and answers false, having answered the request (readwait.go).
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
	at, err := s.waitRead(w, r, min, consistent)
	if err != nil {
		if !errors.Is(err, errRelayed) {
			reply.WriteError(w, r, err)
		}
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

// redirectMigrated answers a request for a model that migrated away from
// this controller with api.CodeRedirect, naming the controller it went
// to (lookup.Migrated).
func (s *base) redirectMigrated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := lookup.Migrated(s.b.Store().Snapshot(), modelOf(r)); err != nil {
			reply.WriteError(w, r, err)
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
