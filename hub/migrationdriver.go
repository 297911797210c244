package hub

import (
	"context"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/migrate"
)

// defaultMigrationAgentWait is Config.MigrationAgentWait's default, Juju's
// migration-agent-wait-time.
const defaultMigrationAgentWait = 15 * time.Minute

// migrationControllers are the registered controllers as the migration
// driver calls them: as the hub's superuser, with a token minted for each
// call (spokeToken) and minted again when one expires; never a stored
// password.
type migrationControllers struct{ s *Server }

func (mc migrationControllers) Client(ctx context.Context, controllerUUID string) (migrate.Client, error) {
	s := mc.s
	c, err := s.store.Controllers.ByUUID(ctx, controllerUUID)
	if err != nil {
		return nil, err
	}
	caSHA, err := ControllerCASHA256(c.CACert)
	if err != nil {
		return nil, err
	}
	mint := func(context.Context) (string, error) {
		return s.spokeToken(authn.Principal{}, c.UUID, caSHA, spokeSuperuser, "")
	}
	tok, err := mint(ctx)
	if err != nil {
		return nil, err
	}
	return api.NewClient(api.ClientConfig{Addresses: c.APIAddresses, CACert: []byte(c.CACert), Token: tok,
		RefreshToken: mint, Timeout: 2 * time.Minute, Logger: s.cfg.Logger})
}

// newMigrationDriver builds the driver the hub runs as a leader worker.
func (s *Server) newMigrationDriver() (*migrate.Driver, error) {
	return migrate.New(migrate.Config{Logger: s.cfg.Logger.With("worker", "migrations"), Now: s.cfg.Now, Store: s.store,
		Controllers: migrationControllers{s}, Kick: func() { s.outbox.Kick() },
		MinionWait: cmpOr(s.cfg.MigrationAgentWait, defaultMigrationAgentWait), Faults: s.cfg.MigrationFaults,
		Attempts: s.cfg.MigrationAttempts, Backoff: s.cfg.MigrationBackoff})
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
