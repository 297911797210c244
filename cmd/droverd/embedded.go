package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/droverhq/drover/authz/embedded"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/internal/pgserver"
	"github.com/droverhq/drover/internal/supervise"
)

// embeddedDeps starts what a hub uses when it is not given its own
// (droverd hub without --dsn, --openfga-url or --oidc-issuer, and droverd
// dev): a private PostgreSQL in the state dir, an OpenFGA server whose
// tables live in the hub's database (schema openfga), and the development
// issuer (Dex). close stops them in reverse order of start.
type embeddedDeps struct {
	stops []func()
}

func (e *embeddedDeps) close() {
	for i := len(e.stops) - 1; i >= 0; i-- {
		e.stops[i]()
	}
	e.stops = nil
}

// prepareStateDir makes dir, traversable by the postgres user who runs the
// private PostgreSQL (secrets inside stay 0600).
func prepareStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	return os.Chmod(dir, 0o711)
}

// postgres starts PostgreSQL in stateDir/postgres and returns the DSN of
// its database db, created on first use. Should the server exit while
// droverd runs (killed, out of memory), it is started again on the same
// data, as a service manager would: the hub answers "database unavailable"
// meanwhile and carries on once it is back.
func (e *embeddedDeps) postgres(ctx context.Context, stateDir, db string, logger *slog.Logger) (string, error) {
	dir := filepath.Join(stateDir, "postgres")
	start := func(ctx context.Context) (*pgserver.Server, error) {
		return pgserver.Start(ctx, dir, pgserver.Durable())
	}
	pg, err := start(ctx)
	var ae *pgserver.AccessError
	if errors.As(err, &ae) {
		return "", usageError{fmt.Errorf("--state-dir %s: %w", stateDir, err)}
	}
	if err != nil {
		return "", fmt.Errorf("postgres: %w", err)
	}
	if err := pg.EnsureDatabase(ctx, db); err != nil {
		_ = pg.Stop()
		return "", err
	}
	// The server outlives ctx: close stops it, after what uses it.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	last := make(chan *pgserver.Server, 1)
	go func() { last <- keepRunning(sctx, pg, start, logger) }() // joined by the stop below
	e.stops = append(e.stops, func() {
		cancel()
		_ = (<-last).Stop()
	})
	return pg.DSN(db), nil
}

// keepRunning starts the server pg again, with start, whenever it exits,
// until ctx ends, and returns the one running then. A start that fails is
// tried again after a pause that doubles from restartBackoffMin up to
// restartBackoffMax; a server that ran for restartBackoffMin or longer
// before its exit starts the pauses again from the minimum.
func keepRunning(ctx context.Context, pg *pgserver.Server, start func(context.Context) (*pgserver.Server, error),
	logger *slog.Logger) *pgserver.Server {
	_ = supervise.Run(ctx, supervise.Config{Name: "embedded-postgres", Logger: logger,
		Min: restartBackoffMin, Max: restartBackoffMax, HealthyAfter: restartBackoffMin,
		Message: "the embedded PostgreSQL did not start; trying again", Level: slog.LevelError},
		func(ctx context.Context) error {
			for {
				if !exited(pg) {
					select {
					case <-ctx.Done():
						return nil
					case <-pg.Exited():
					}
					logger.Error("the embedded PostgreSQL exited; starting it again", "err", pg.ExitErr(), "log", pg.LogPath())
				}
				next, err := start(ctx)
				if err != nil {
					return err
				}
				pg = next
				logger.Info("the embedded PostgreSQL is running again")
			}
		})
	return pg
}

func exited(pg *pgserver.Server) bool {
	select {
	case <-pg.Exited():
		return true
	default:
		return false
	}
}

// The pause before starting the embedded PostgreSQL again after a failed
// start, doubling from min to max.
const (
	restartBackoffMin = time.Second
	restartBackoffMax = 30 * time.Second
)

// openfga starts an OpenFGA server on the hub's database dsn, its tables in
// schema openfga, and returns its URL. Hub replicas sharing the database
// each run one and see the same tuples.
func (e *embeddedDeps) openfga(ctx context.Context, dsn string) (string, error) {
	fga, err := embedded.Start(ctx, embedded.Config{Engine: embedded.EnginePostgres, URI: dsn, Schema: openfgaSchema,
		MaxOpenConns: openfgaConns})
	if err != nil {
		return "", fmt.Errorf("openfga: %w", err)
	}
	e.stops = append(e.stops, func() { _ = fga.Stop() })
	return fga.URL(), nil
}

// The embedded OpenFGA's schema in the hub's database, and the most
// connections it opens (the hub's own pool has 16).
const (
	openfgaSchema = "openfga"
	openfgaConns  = 8
)

// issuer starts the development issuer on listen for a hub at hubURL, with
// the demo user and the given service accounts, and returns its URL.
func (e *embeddedDeps) issuer(ctx context.Context, listen, hubURL string, accounts []DevServiceAcct, users map[string]string, logger *slog.Logger) (string, error) {
	clients := make([]devidp.Client, 0, len(accounts))
	for _, a := range accounts {
		clients = append(clients, devidp.Client{ID: a.ClientID, Secret: a.ClientSecret})
	}
	idp, err := devidp.Start(ctx, devidp.Config{Listen: listen, HubRedirectURIs: []string{hubURL + "/auth/callback"},
		ServiceAccounts: clients, Users: users, Logger: logger})
	if err != nil {
		return "", fmt.Errorf("identity provider: %w", err)
	}
	e.stops = append(e.stops, func() { _ = idp.Stop() })
	return idp.URL(), nil
}

// serviceAccountSecrets returns a secret for each of the service accounts,
// kept in path (0600) across restarts: the ones path already has, new ones
// for the rest. The embedded issuer checks them; a hub with its own issuer
// never needs them.
func serviceAccountSecrets(path string, want []hub.ServiceAccount) ([]DevServiceAcct, error) {
	var known []DevServiceAcct
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &known); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	out := make([]DevServiceAcct, 0, len(want))
	changed := false
	for _, w := range want {
		i := slices.IndexFunc(known, func(k DevServiceAcct) bool { return k.ClientID == w.ClientID })
		if i >= 0 && known[i].ClientSecret != "" {
			a := known[i]
			changed = changed || a.Org != w.Org
			a.Org = w.Org
			out = append(out, a)
			continue
		}
		sec := make([]byte, 24)
		if _, err := rand.Read(sec); err != nil {
			return nil, err
		}
		out = append(out, DevServiceAcct{ClientID: w.ClientID, ClientSecret: base64.RawURLEncoding.EncodeToString(sec), Org: w.Org})
		changed = true
	}
	if !changed && len(known) == len(out) {
		return out, nil
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return out, os.WriteFile(path, append(b, '\n'), 0o600)
}

// devKeyEncryptionKey returns the secret in path, writing a new one there
// (0600) first if there is none: the development federation seals its
// signing keys like a production hub, with the secret beside the database.
func devKeyEncryptionKey(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	sec := make([]byte, 32)
	if _, err := rand.Read(sec); err != nil {
		return nil, err
	}
	b := []byte(base64.StdEncoding.EncodeToString(sec) + "\n")
	return b, os.WriteFile(path, b, 0o600)
}
