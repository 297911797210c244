package hub

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/keyseal"
	"github.com/droverhq/drover/hub/internal/proxy"
	"github.com/droverhq/drover/hub/internal/store"
)

// Config is everything the hub needs; Validate fills defaults.
type Config struct {
	// DSN is the PostgreSQL connection string (required).
	DSN string
	// DatabaseTimeout bounds each database statement, and each wait for a
	// connection, of a request (default store.StatementTimeout, 10 s): a
	// hung database is answered "unavailable", not waited on.
	DatabaseTimeout time.Duration
	// OpenFGAURL is the OpenFGA HTTP API (required); OpenFGAStore is the
	// store name (default "drover").
	OpenFGAURL, OpenFGAStore string
	// OpenFGATimeout bounds each request to OpenFGA (default
	// authz.RequestTimeout, 10 s): a hung one is answered "unavailable".
	OpenFGATimeout time.Duration

	// OIDCIssuer and OIDCClientID identify the hub at the identity
	// provider (required). OIDCClientSecret is empty for a public client
	// (device flow and PKCE need none).
	OIDCIssuer, OIDCClientID, OIDCClientSecret string
	// OIDCHTTPClient talks to the issuer (e.g. with a private CA). One
	// without a Timeout gets a copy bounded to 10 s a request.
	OIDCHTTPClient *http.Client

	// Listen is the HTTPS address; PublicURL is how clients reach it
	// (default https://Listen). It is the session tokens' issuer.
	Listen, PublicURL string
	// MetricsListen, if set, is a plain HTTP address (an internal one) that
	// alone serves /metrics; the public address then answers it 404.
	MetricsListen string
	// StateDir holds the generated TLS CA and certificate (required unless
	// TLSCert and TLSKey are given).
	StateDir        string
	TLSCert, TLSKey string
	// TLSCA is the PEM file of the CA that signed TLSCert. The hub hands
	// it to controllers it registers with a join token, which pin it to
	// fetch the JWKS. Default: the generated CA; with TLSCert and no
	// TLSCA, controllers use their system roots.
	TLSCA string

	// KeyEncryptionKey, if set, is a secret of at least 32 bytes, kept
	// outside the database, with which the hub seals its signing keys
	// before storing them (hub/internal/keyseal): a copy of the database
	// alone then mints no token. OldKeyEncryptionKeys are secrets it
	// replaces: keys sealed with one of them, and keys stored plain, are
	// sealed again with KeyEncryptionKey at start. Every replica needs the
	// same one.
	KeyEncryptionKey     []byte
	OldKeyEncryptionKeys [][]byte
	keyRing              *keyseal.Ring

	// TrustedProxies are the networks of the load balancers or reverse
	// proxies in front of the hub: a request from one of them is taken to
	// come from the rightmost X-Forwarded-For address outside them, which
	// the audit log records and logins are throttled by. Empty: the peer's
	// address, X-Forwarded-For ignored.
	TrustedProxies []netip.Prefix

	// DefaultOrg is the organization people join on first login.
	DefaultOrg string
	// Admins are emails made hub administrators on login (bootstrap).
	Admins []string
	// ServiceAccounts are registered at start.
	ServiceAccounts []store.ServiceAccount

	// SessionTTL is the lifetime of hub access tokens (default 15m);
	// RefreshTTL that of refresh tokens (default 30 days).
	SessionTTL, RefreshTTL time.Duration
	// AuditRetention deletes audit entries older than this; 0 keeps all.
	AuditRetention time.Duration
	// IdleTimeout closes a client's keep-alive connection left idle this
	// long (default 2m; watches and followed logs are not idle).
	IdleTimeout time.Duration
	// MaxLiveCalls bounds the long-lived calls (watches, followed logs)
	// one identity holds open on this replica (default 1000; negative: no
	// bound). Each holds two connections and their goroutines.
	MaxLiveCalls int
	// IndexResyncEvery is how often the indexer reads each controller's
	// models whole again (a reset), repairing whatever the index came to
	// hold wrong (default 1h).
	IndexResyncEvery time.Duration
	// MigrationAgentWait bounds the migration driver's wait for a model's
	// agents to report in a phase (default 15 minutes, Juju's
	// migration-agent-wait-time).
	MigrationAgentWait time.Duration
	// MigrationFaults is called at each of the migration driver's named
	// fault points ("before-call:QUIESCE", "after-persist:EXPORT", ...;
	// hub/internal/migrate); an error there stops the driver's work on
	// the migration as a crash would. Nil outside fault-injection tests.
	MigrationFaults func(point string) error
	// MigrationAttempts bounds the tries of a migration step before its
	// phase gives up (default 5), MigrationBackoff the pause after the
	// first failed try, doubling (default 1 s).
	MigrationAttempts int
	MigrationBackoff  time.Duration
	// MaxControllerModels bounds the models the index holds for one
	// controller when it adopts those created on the controller directly
	// (default 20,000; negative: no bound). A controller registered by an
	// organization is that organization's to run: past the bound, the
	// models it makes are not indexed, so it cannot fill the hub's
	// database. Models placed through the hub are not refused.
	MaxControllerModels int
	// IndexWriteRate bounds the index rows one controller's events may
	// write per second, sustained (default 1000, bursts of ten times
	// that; negative: no bound). Past it the hub reads the controller's
	// stream more slowly, and the controller's stream waits: a controller
	// an organization runs cannot keep the hub's database busy.
	IndexWriteRate int
	// StatusCacheBytes bounds the model statuses the proxy keeps to
	// revalidate with their controllers (statuscache.go; default 64 MiB;
	// negative: none kept, every status relayed as it comes).
	StatusCacheBytes int64

	Logger *slog.Logger
	Now    func() time.Time
	// Ready, if set, is closed once the hub serves.
	Ready chan<- struct{}

	// Bounds that tests shorten (export_test.go); Validate fills the
	// defaults.
	//
	// oidcTimeout bounds each request to the OIDC issuer when
	// OIDCHTTPClient has no Timeout of its own. answerHeadTimeout bounds
	// the wait for the head of a controller's answer
	// (proxy.Timeouts.Head). claimLease is how long a claim of an
	// add-model (its model name, and its placement, which the indexer
	// leaves to it: store.Models.ClaimPlacement) lasts unless renewed; the
	// add-model renews both every third of it while it runs, so a claim
	// outlives an add-model that never ended (its hub crashed) by at most
	// this long, and a name's wait is as short. restoreLimit bounds how
	// long the API waits for OpenFGA's tuples to be restored at start
	// (restore.go). maxEventFrame bounds one frame of a controller's event
	// stream (indexer.Config.MaxEventFrame). exportRows bounds the rows
	// of one export (GET /v1/audit/export, GET /v1/compliance/access).
	oidcTimeout, answerHeadTimeout, claimLease, restoreLimit time.Duration
	maxEventFrame                                            int64
	// fedKeepalive is the silence after which a federation stream sends
	// a keepalive (30 s); fedWriteTimeout bounds the write of one of its
	// frames (10 s), and fedQueue the notes a stream may fall behind
	// (64): past either, the client is too slow and the stream ends
	// (fedstream.go).
	fedKeepalive, fedWriteTimeout time.Duration
	fedQueue                      int
	exportRows                    int
}

// Audience is the audience of the hub's session tokens. Spoke tokens carry
// the spoke's UUID instead, so neither can be replayed against the other.
const Audience = authn.Audience

// Validate checks c and fills defaults.
func (c *Config) Validate() error {
	var errs []error
	need := func(v, name string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	need(c.DSN, "--dsn")
	need(c.OpenFGAURL, "--openfga-url")
	need(c.OIDCIssuer, "--oidc-issuer")
	need(c.OIDCClientID, "--oidc-client-id")
	need(c.Listen, "--listen")
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	}
	if c.TLSCert == "" && c.StateDir == "" {
		errs = append(errs, errors.New("--state-dir is required without --tls-cert/--tls-key"))
	}
	if c.OIDCIssuer != "" {
		if u, err := url.Parse(c.OIDCIssuer); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			errs = append(errs, fmt.Errorf("--oidc-issuer %q is not an http(s) URL", c.OIDCIssuer))
		}
	}
	var err error
	if c.keyRing, err = keyRing(c.KeyEncryptionKey, c.OldKeyEncryptionKeys); err != nil {
		errs = append(errs, err)
	}
	if c.OpenFGAStore == "" {
		c.OpenFGAStore = "drover"
	}
	if c.PublicURL == "" {
		c.PublicURL = "https://" + c.Listen
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.DefaultOrg == "" {
		c.DefaultOrg = "default"
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = 15 * time.Minute
	}
	if c.RefreshTTL <= 0 {
		c.RefreshTTL = 30 * 24 * time.Hour
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 2 * time.Minute
	}
	if c.MaxLiveCalls == 0 {
		c.MaxLiveCalls = 1000
	}
	if c.DatabaseTimeout <= 0 {
		c.DatabaseTimeout = store.StatementTimeout
	}
	if c.AuditRetention < 0 {
		errs = append(errs, errors.New("audit retention must not be negative"))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.oidcTimeout = cmp.Or(c.oidcTimeout, 10*time.Second)
	c.answerHeadTimeout = cmp.Or(c.answerHeadTimeout, proxy.DefaultTimeouts.Head)
	c.claimLease = cmp.Or(c.claimLease, 30*time.Second)
	c.restoreLimit = cmp.Or(c.restoreLimit, 5*time.Minute)
	c.maxEventFrame = cmp.Or(c.maxEventFrame, 64<<20)
	c.fedKeepalive = cmp.Or(c.fedKeepalive, 30*time.Second)
	c.fedWriteTimeout = cmp.Or(c.fedWriteTimeout, 10*time.Second)
	c.fedQueue = cmp.Or(c.fedQueue, 64)
	c.exportRows = cmp.Or(c.exportRows, 1_000_000)
	if c.OIDCHTTPClient == nil {
		c.OIDCHTTPClient = &http.Client{}
	}
	if c.OIDCHTTPClient.Timeout == 0 {
		// A hung issuer is then answered "unavailable" in time for the
		// caller to read it (drover gives up after 30 s).
		hc := *c.OIDCHTTPClient
		hc.Timeout = c.oidcTimeout
		c.OIDCHTTPClient = &hc
	}
	return errors.Join(errs...)
}

// CheckKeyEncryptionKeys reports what is wrong with the secrets given as
// Config.KeyEncryptionKey and OldKeyEncryptionKeys, before anything starts.
func CheckKeyEncryptionKeys(current []byte, old [][]byte) error {
	_, err := keyRing(current, old)
	return err
}

func keyRing(current []byte, old [][]byte) (*keyseal.Ring, error) {
	switch {
	case len(current) > 0:
		ring, err := keyseal.New(current, old...)
		if err != nil {
			return nil, fmt.Errorf("--key-encryption-key: %w", err)
		}
		return ring, nil
	case len(old) > 0:
		return nil, errors.New("--old-key-encryption-key needs --key-encryption-key (the secret that replaces it)")
	}
	return nil, nil
}

// defaultStatusCacheBytes is Config.StatusCacheBytes's default.
const defaultStatusCacheBytes = 64 << 20

// ServiceAccount is a client allowed client-credentials login, bound to an
// organization.
type ServiceAccount = store.ServiceAccount

// defaultIndexWriteRate is Config.IndexWriteRate's default.
const defaultIndexWriteRate = 1000

// defaultMaxControllerModels is Config.MaxControllerModels's default.
const defaultMaxControllerModels = 20000

// bound reads a configured limit: 0 means its default def, a negative
// value no limit (0 from here on).
func bound[T int | int64](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// defaultIndexResync is Config.IndexResyncEvery's default.
const defaultIndexResync = time.Hour
