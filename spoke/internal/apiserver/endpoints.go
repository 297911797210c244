package apiserver

import (
	"log/slog"

	"github.com/droverhq/drover/spoke/internal/agentgw"
	"github.com/droverhq/drover/spoke/internal/status"
)

// base is what every endpoint shares: the node it serves, the server's
// configuration and lifetime, and the read, write and stream steps every
// handler takes (helpers.go, follow.go).
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
		charms:       &charmEndpoint{base: b, charms: charms, agents: agents},
		status:       &statusEndpoint{base: b, epoch: status.NewEpoch()},
		events:       &eventEndpoint{b},
		logs:         &logEndpoint{base: b, book: logs},
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
	charms *charmCache
	agents *agentgw.Gateway
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
