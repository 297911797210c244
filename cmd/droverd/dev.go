package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/internal/supervise"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/spoke/provider/local"
)

// devOptions are the flags of `droverd dev`.
type devOptions struct {
	stateDir, logLevel string
	listen             devAddrs
	reset              bool
	migrationAgentWait time.Duration
	// hubPublicURL is the hub's URL as browsers reach it ("": its own
	// address).
	hubPublicURL string
}

// DevInfo is dev.json: what scripts need to use the local federation.
type DevInfo struct {
	HubURL string `json:"hub-url"`
	CAFile string `json:"ca-file"`
	Issuer string `json:"oidc-issuer"`
	// User is the demo person, an administrator of the hub; Reader a
	// member of the same organization with no grant of its own (what it
	// may read is granted to it); OtherOrgUser a member of another
	// organization.
	User         DevUser `json:"user"`
	Reader       DevUser `json:"reader"`
	OtherOrgUser DevUser `json:"other-org-user"`
	// DashboardURL is where a browser opens the dashboard: the hub's
	// public URL.
	DashboardURL    string           `json:"dashboard-url"`
	ServiceAccounts []DevServiceAcct `json:"service-accounts"`
	Controllers     []DevController  `json:"controllers"`
	// Addresses are the ones the federation listens on, kept for its
	// later starts (a controller's raft port is its API port + 1).
	Addresses devAddrs `json:"addresses"`
}

// DevUser is a person of the dev issuer (device-flow and dashboard login).
type DevUser struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Org      string `json:"org"`
}

// DevServiceAcct is a client-credentials login bound to an organization.
type DevServiceAcct struct {
	ClientID     string `json:"client-id"`
	ClientSecret string `json:"client-secret"`
	Org          string `json:"org"`
}

// DevController is one local spoke.
type DevController struct {
	Name    string `json:"name"`
	Region  string `json:"region"`
	URL     string `json:"url"`
	DataDir string `json:"data-dir"`
}

const (
	devOrg   = "demo"
	otherOrg = "globex"
)

// newDevCmd is `droverd dev`, with defaultStateDir as --state-dir's
// default; its summary goes to stdout, its logs to stderr.
func newDevCmd(stdout, stderr io.Writer, defaultStateDir string) *cobra.Command {
	o := &devOptions{}
	cmd := &cobra.Command{
		Use:   "dev [--state-dir DIR] [--reset]",
		Short: "Run a whole federation on this machine: hub, PostgreSQL, OpenFGA, OIDC issuer and two controllers",
		Long: `Runs a whole Drover federation on this machine, for development: a private
PostgreSQL in the state dir, an embedded OpenFGA (its tuples in the hub's
database), the development OIDC issuer (Dex), the hub, and two controllers,
east and west, registered with the hub. Ctrl-C stops everything, the
controllers' local machines too; the state is kept for the next start.

A new state dir takes the addresses the flags give; a default port another
process holds is replaced by a free one. The state dir records them
(addresses.json) and later starts use them again: a flag naming another
address is refused, and --reset deletes the state to start afresh. The
addresses, URLs and logins are printed and written to STATE/dev.json.`,
		Example: `  droverd dev
  droverd dev --state-dir /tmp/fed --hub-listen 127.0.0.1:27080
  droverd dev --reset --east-listen 127.0.0.1:27070`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDev(cmd.Context(), o, cmd.Flags().Changed, stdout, stderr)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.stateDir, "state-dir", defaultStateDir, "where the local federation keeps its state across restarts")
	fs.StringVar(&o.listen.Hub, "hub-listen", "127.0.0.1:17080", "hub HTTPS address (default taken: a free port)")
	fs.StringVar(&o.listen.IDP, "idp-listen", "127.0.0.1:17090", "development OIDC issuer address (identities are bound to the issuer URL; default taken: a free port)")
	fs.StringVar(&o.listen.East, "east-listen", "127.0.0.1:17070", "API address of the east controller, raft on port+1 (default taken: free ports)")
	fs.StringVar(&o.listen.West, "west-listen", "127.0.0.1:17072", "API address of the west controller, raft on port+1 (default taken: free ports)")
	fs.StringVar(&o.hubPublicURL, "hub-public-url", "", "the hub's URL as browsers and clients reach it, when a port forward or TCP proxy stands in front of it (default https://<hub-listen>)")
	fs.BoolVar(&o.reset, "reset", false, "delete the state dir's federation (its controllers' machines too) and start afresh")
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level: debug, info, warn or error")
	fs.DurationVar(&o.migrationAgentWait, "migration-agent-wait", 0, "how long a model migration waits for the model's agents to report in a phase before it aborts (default 15m, Juju's migration-agent-wait-time)")
	return cmd
}

// runDev starts a whole federation on one machine: a private PostgreSQL in
// the state dir, an embedded OpenFGA (its tuples in schema openfga of the
// hub's database), the embedded Dex issuer, the hub, and two spokes
// (regions east and west) registered with the hub with hub tokens (so they
// trust it). What can be checked before anything starts is (the state
// dir, the addresses), so that its errors come first. Shutdown runs in
// reverse order of start.
func runDev(ctx context.Context, o *devOptions, changed func(string) bool, stdout, stderr io.Writer) error {
	logger, err := newLogger(stderr, o.logLevel)
	if err != nil {
		return err
	}
	unlock, err := openDevState(o.stateDir)
	if err != nil {
		return err
	}
	defer unlock()
	var rec *devAddrs // --reset: the state's addresses bind no more
	if !o.reset {
		if rec, err = readAddrRecord(o.stateDir); err != nil {
			return err
		}
	}
	if o.listen, err = resolveDevAddrs(o.stateDir, rec, o.listen, changed, netProbe); err != nil {
		return err
	}
	// The new addresses are checked before --reset deletes anything.
	if o.reset {
		if err := resetDevState(o.stateDir); err != nil {
			return fmt.Errorf("--reset: %w", err)
		}
	}
	if err := writeAddrRecord(o.stateDir, o.listen); err != nil {
		return err
	}
	secrets, err := serviceAccountSecrets(filepath.Join(o.stateDir, "service-accounts.json"),
		[]hub.ServiceAccount{{ClientID: "ci-" + devOrg, Org: devOrg}, {ClientID: "ci-" + otherOrg, Org: otherOrg}})
	if err != nil {
		return err
	}
	var deps embeddedDeps
	defer deps.close()
	hubCfg, err := startDevDeps(ctx, &deps, o, secrets, logger)
	if err != nil {
		return err
	}
	hubReady := make(chan struct{})
	hubCfg.Ready = hubReady
	h, err := hub.New(ctx, hubCfg)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	defer h.Close()

	runCtx, stop := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(runCtx)
	// On any early return, stop the servers before the deferred closes
	// above release what they use.
	defer func() { stop(); _ = g.Wait() }()
	g.Go(func() error { return h.Run(gctx) })
	if err := waitReady(gctx, hubReady, g); err != nil {
		return err
	}
	info := DevInfo{HubURL: hubCfg.PublicURL, CAFile: hub.CACertPath(hubCfg.StateDir), Issuer: hubCfg.OIDCIssuer,
		User:         DevUser{Email: devidp.DemoEmail, Password: devidp.DemoPassword, Org: devOrg},
		Reader:       DevUser{Email: devidp.ReaderEmail, Password: devidp.ReaderPassword, Org: devOrg},
		OtherOrgUser: DevUser{Email: devidp.OtherEmail, Password: devidp.OtherPassword, Org: otherOrg},
		DashboardURL: hubCfg.PublicURL + "/", ServiceAccounts: secrets, Addresses: o.listen}
	if err := seedDevPeople(gctx, h, info.Reader, info.OtherOrgUser); err != nil {
		return err
	}
	if info.Controllers, err = startDevSpokes(gctx, g, h, o, logger); err != nil {
		return err
	}
	devFile := filepath.Join(o.stateDir, "dev.json")
	b, _ := json.MarshalIndent(info, "", "  ")
	if err := os.WriteFile(devFile, append(b, '\n'), 0o600); err != nil {
		return err
	}
	printDev(stdout, info, devFile, o.stateDir)
	logger.Log(ctx, slog.LevelInfo, "dev federation running")
	err = g.Wait()
	// Ctrl-C stops everything: the spokes' local machines too (their
	// agents and charm workloads), so nothing keeps running or holds ports.
	for _, c := range info.Controllers {
		local.KillProcessesUnder(local.DefaultDir(c.DataDir), 5*time.Second)
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// startDevDeps starts the hub's PostgreSQL, OpenFGA and issuer and returns
// the hub's configuration, pointed at them.
func startDevDeps(ctx context.Context, deps *embeddedDeps, o *devOptions, secrets []DevServiceAcct, logger *slog.Logger) (hub.Config, error) {
	dsn, err := deps.postgres(ctx, o.stateDir, "hub", logger)
	if err != nil {
		return hub.Config{}, err
	}
	fgaURL, err := deps.openfga(ctx, dsn)
	if err != nil {
		return hub.Config{}, err
	}
	hubURL := "https://" + o.listen.Hub
	if o.hubPublicURL != "" {
		u, err := url.Parse(o.hubPublicURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return hub.Config{}, fmt.Errorf("--hub-public-url %q: give https://HOST[:PORT], with no path", o.hubPublicURL)
		}
		hubURL = strings.TrimSuffix(o.hubPublicURL, "/")
	}
	issuer, err := deps.issuer(ctx, o.listen.IDP, hubURL, secrets, devidp.DevUsers(), logger)
	if err != nil {
		return hub.Config{}, err
	}
	kek, err := devKeyEncryptionKey(filepath.Join(o.stateDir, "key-encryption-key"))
	if err != nil {
		return hub.Config{}, err
	}
	return hub.Config{DSN: dsn, OpenFGAURL: fgaURL, OIDCIssuer: issuer,
		OIDCClientID: devidp.HubClientID, Listen: o.listen.Hub, PublicURL: hubURL, StateDir: filepath.Join(o.stateDir, "hub"),
		KeyEncryptionKey: kek, DefaultOrg: devOrg, Admins: []string{devidp.DemoEmail}, Logger: logger.With("component", "hub"),
		MigrationAgentWait: o.migrationAgentWait,
		ServiceAccounts: []hub.ServiceAccount{{ClientID: secrets[0].ClientID, Org: secrets[0].Org},
			{ClientID: secrets[1].ClientID, Org: secrets[1].Org}}}, nil
}

// startDevSpokes starts the east and west controllers in g, one after the
// other, and registers each with the hub h once it is ready.
func startDevSpokes(ctx context.Context, g *errgroup.Group, h *hub.Server, o *devOptions, logger *slog.Logger) ([]DevController, error) {
	var out []DevController
	for _, sp := range []struct{ name, listen string }{{"east", o.listen.East}, {"west", o.listen.West}} {
		dir := filepath.Join(o.stateDir, "spoke-"+sp.name)
		ready := make(chan struct{})
		cfg := spoke.Config{DataDir: dir, Listen: sp.listen, Name: sp.name, Bootstrap: true, Ready: ready,
			Logger: logger.With("component", "spoke", "controller", sp.name)}
		g.Go(func() error { return spoke.Run(ctx, cfg) })
		if err := waitReady(ctx, ready, g); err != nil {
			return nil, err
		}
		cred, err := spoke.ReadAdminCredential(dir)
		if err != nil {
			return nil, err
		}
		req := hub.AddControllerRequest{Name: sp.name, URL: "https://" + sp.listen, CACert: cred.CACert, Region: sp.name, Cloud: "localhost"}
		if err := registerWhenReady(ctx, h, req, cred, logger); err != nil {
			return nil, fmt.Errorf("register controller %s: %w", sp.name, err)
		}
		out = append(out, DevController{Name: sp.name, Region: sp.name, URL: "https://" + sp.listen, DataDir: dir})
	}
	return out, nil
}

// defaultDevStateDir is ~/.local/share/drover/dev, except as root: the
// private PostgreSQL then runs as the postgres user, who cannot enter
// /root, so the state lives in /var/lib/drover/dev.
func defaultDevStateDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/drover/dev"
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "share", "drover", "dev")
}

// seedDevPeople places the dev issuer's other people in their
// organizations before they first log in (a first login otherwise joins
// the hub's default organization): their identities are made as a grant
// by email makes them, which their login takes over.
func seedDevPeople(ctx context.Context, h *hub.Server, people ...DevUser) error {
	for _, p := range people {
		if _, err := h.Store().Identities.Pending(ctx, p.Email, p.Org); err != nil {
			return fmt.Errorf("dev user %s: %w", p.Email, err)
		}
	}
	return nil
}

func printDev(w io.Writer, info DevInfo, devFile, stateDir string) {
	fmt.Fprintf(w, `Drover dev federation is running.
  dashboard:    %s  (sign in as %s / %s; also %s / %s, a reader, and
                %s / %s of organization %s)
  hub:          %s  (CA: %s)
  issuer:       %s
  controllers:  east %s, west %s (regions east and west), registered with the hub
  log in:       drover login %s --ca %s
                (device flow: open the URL it prints and sign in as %s / %s)
  scripts:      drover login %s --ca %s --client-id %s --client-secret %s
  details:      %s
Press Ctrl-C to stop; state is kept in %s.
`, info.DashboardURL, info.User.Email, info.User.Password, info.Reader.Email, info.Reader.Password,
		info.OtherOrgUser.Email, info.OtherOrgUser.Password, info.OtherOrgUser.Org,
		info.HubURL, info.CAFile, info.Issuer, info.Controllers[0].URL, info.Controllers[1].URL, info.HubURL, info.CAFile, info.User.Email, info.User.Password,
		info.HubURL, info.CAFile, info.ServiceAccounts[0].ClientID, info.ServiceAccounts[0].ClientSecret, devFile, stateDir)
}

// registerWhenReady registers a freshly started controller as an
// administrator would: a hub token created on the controller with its admin
// credential, handed to the hub, which makes the controller trust it. It
// retries while the controller finishes bootstrapping (its identity is
// replicated state), with a new token each time (a token works once).
func registerWhenReady(ctx context.Context, h *hub.Server, req hub.AddControllerRequest, cred *spoke.AdminCredential, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cl, err := api.NewClient(api.ClientConfig{Addresses: cred.APIAddresses, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password, Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cl.Close()
	var last error
	err = supervise.Run(ctx, supervise.Config{Name: "register-" + req.Name, Logger: logger, Min: registerBackoffMin, Max: registerBackoffMax,
		Message: "registering the controller with the hub; will retry", Level: slog.LevelDebug}, func(ctx context.Context) error {
		tok, err := cl.CreateHubToken(ctx, 10*time.Minute)
		if err == nil {
			req.JoinToken = tok.Token
			_, err = h.RegisterController(ctx, req, true)
		}
		last = err
		return err
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// The pause between attempts to register a controller, doubling from min
// to max.
const (
	registerBackoffMin = 50 * time.Millisecond
	registerBackoffMax = time.Second
)

// waitReady waits for a component's ready signal, or the group's failure.
func waitReady(ctx context.Context, ready <-chan struct{}, g *errgroup.Group) error {
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		if err := g.Wait(); err != nil {
			return err
		}
		return ctx.Err()
	}
}
