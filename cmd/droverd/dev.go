package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

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
	stateDir, hubListen, idpListen, eastListen, westListen, logLevel string
}

// DevInfo is dev.json: what scripts need to use the local federation.
type DevInfo struct {
	HubURL          string           `json:"hub-url"`
	CAFile          string           `json:"ca-file"`
	Issuer          string           `json:"oidc-issuer"`
	User            DevUser          `json:"user"`
	ServiceAccounts []DevServiceAcct `json:"service-accounts"`
	Controllers     []DevController  `json:"controllers"`
}

// DevUser is the demo person (device-flow login).
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

// newDevFlags defines the flags of `droverd dev`, with defaultStateDir as
// --state-dir's default; its usage goes to stderr.
func newDevFlags(stderr io.Writer, defaultStateDir string) (*flag.FlagSet, *devOptions) {
	fs := flag.NewFlagSet("droverd dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &devOptions{}
	fs.StringVar(&o.stateDir, "state-dir", defaultStateDir, "where the local federation keeps its state across restarts")
	fs.StringVar(&o.hubListen, "hub-listen", "127.0.0.1:17080", "hub HTTPS address")
	fs.StringVar(&o.idpListen, "idp-listen", "127.0.0.1:17090", "development OIDC issuer address (kept stable: identities are bound to the issuer URL)")
	fs.StringVar(&o.eastListen, "east-listen", "127.0.0.1:17070", "API address of the east controller (raft: port+1)")
	fs.StringVar(&o.westListen, "west-listen", "127.0.0.1:17072", "API address of the west controller (raft: port+1)")
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level")
	return fs, o
}

// runDev starts a whole federation on one machine: a private PostgreSQL in
// the state dir, an embedded OpenFGA (its tuples in schema openfga of the
// hub's database), the embedded Dex issuer, the hub, and two spokes
// (regions east and west) registered with the hub with hub tokens (so they
// trust it). Shutdown runs in reverse order of start.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, o := newDevFlags(stderr, defaultDevStateDir())
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger, err := newLogger(stderr, o.logLevel)
	if err != nil {
		return err
	}
	if err := prepareStateDir(o.stateDir); err != nil {
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
		User: DevUser{Email: devidp.DemoEmail, Password: devidp.DemoPassword, Org: devOrg}, ServiceAccounts: secrets}
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
	hubURL := "https://" + o.hubListen
	issuer, err := deps.issuer(ctx, o.idpListen, hubURL, secrets, logger)
	if err != nil {
		return hub.Config{}, err
	}
	kek, err := devKeyEncryptionKey(filepath.Join(o.stateDir, "key-encryption-key"))
	if err != nil {
		return hub.Config{}, err
	}
	return hub.Config{DSN: dsn, OpenFGAURL: fgaURL, OIDCIssuer: issuer,
		OIDCClientID: devidp.HubClientID, Listen: o.hubListen, PublicURL: hubURL, StateDir: filepath.Join(o.stateDir, "hub"),
		KeyEncryptionKey: kek, DefaultOrg: devOrg, Admins: []string{devidp.DemoEmail}, Logger: logger.With("component", "hub"),
		ServiceAccounts: []hub.ServiceAccount{{ClientID: secrets[0].ClientID, Org: secrets[0].Org},
			{ClientID: secrets[1].ClientID, Org: secrets[1].Org}}}, nil
}

// startDevSpokes starts the east and west controllers in g, one after the
// other, and registers each with the hub h once it is ready.
func startDevSpokes(ctx context.Context, g *errgroup.Group, h *hub.Server, o *devOptions, logger *slog.Logger) ([]DevController, error) {
	var out []DevController
	for _, sp := range []struct{ name, listen string }{{"east", o.eastListen}, {"west", o.westListen}} {
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

func printDev(w io.Writer, info DevInfo, devFile, stateDir string) {
	fmt.Fprintf(w, `Drover dev federation is running.
  hub:          %s  (CA: %s)
  controllers:  east, west (regions east and west), registered with the hub
  log in:       drover login %s --ca %s
                (device flow: open the URL it prints and sign in as %s / %s)
  scripts:      drover login %s --ca %s --client-id %s --client-secret %s
  details:      %s
Press Ctrl-C to stop; state is kept in %s.
`, info.HubURL, info.CAFile, info.HubURL, info.CAFile, info.User.Email, info.User.Password,
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
