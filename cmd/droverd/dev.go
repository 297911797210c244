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

// runDev starts a whole federation on one machine: a private PostgreSQL in
// the state dir, an embedded OpenFGA (its tuples in schema openfga of the
// hub's database), the embedded Dex issuer,
// the hub, and two spokes (regions east and west) registered with the hub
// with hub tokens (so they trust it). Shutdown runs in reverse order of start.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("droverd dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o devOptions
	fs.StringVar(&o.stateDir, "state-dir", defaultDevStateDir(), "where the local federation keeps its state across restarts")
	fs.StringVar(&o.hubListen, "hub-listen", "127.0.0.1:17080", "hub HTTPS address")
	fs.StringVar(&o.idpListen, "idp-listen", "127.0.0.1:17090", "development OIDC issuer address (kept stable: identities are bound to the issuer URL)")
	fs.StringVar(&o.eastListen, "east-listen", "127.0.0.1:17070", "API address of the east controller (raft: port+1)")
	fs.StringVar(&o.westListen, "west-listen", "127.0.0.1:17072", "API address of the west controller (raft: port+1)")
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
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
	dsn, err := deps.postgres(ctx, o.stateDir, "hub", logger)
	if err != nil {
		return err
	}
	fgaURL, err := deps.openfga(ctx, dsn)
	if err != nil {
		return err
	}
	hubURL := "https://" + o.hubListen
	issuer, err := deps.issuer(ctx, o.idpListen, hubURL, secrets, logger)
	if err != nil {
		return err
	}

	hubDir := filepath.Join(o.stateDir, "hub")
	kek, err := devKeyEncryptionKey(filepath.Join(o.stateDir, "key-encryption-key"))
	if err != nil {
		return err
	}
	hubReady := make(chan struct{})
	h, err := hub.New(ctx, hub.Config{DSN: dsn, OpenFGAURL: fgaURL, OIDCIssuer: issuer,
		OIDCClientID: devidp.HubClientID, Listen: o.hubListen, PublicURL: hubURL, StateDir: hubDir, KeyEncryptionKey: kek,
		DefaultOrg: devOrg, Admins: []string{devidp.DemoEmail}, Logger: logger.With("component", "hub"),
		ServiceAccounts: []hub.ServiceAccount{{ClientID: secrets[0].ClientID, Org: secrets[0].Org},
			{ClientID: secrets[1].ClientID, Org: secrets[1].Org}}, Ready: hubReady})
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
	info := DevInfo{HubURL: hubURL, CAFile: hub.CACertFile(hubDir), Issuer: issuer,
		User: DevUser{Email: devidp.DemoEmail, Password: devidp.DemoPassword, Org: devOrg}, ServiceAccounts: secrets}
	for _, sp := range []struct{ name, listen string }{{"east", o.eastListen}, {"west", o.westListen}} {
		dir := filepath.Join(o.stateDir, "spoke-"+sp.name)
		ready := make(chan struct{})
		cfg := spoke.Config{DataDir: dir, Listen: sp.listen, Name: sp.name, Bootstrap: true, Ready: ready,
			Logger: logger.With("component", "spoke", "controller", sp.name)}
		g.Go(func() error { return spoke.Run(gctx, cfg) })
		if err := waitReady(gctx, ready, g); err != nil {
			return err
		}
		cred, err := spoke.ReadAdminCredential(dir)
		if err != nil {
			return err
		}
		req := hub.AddControllerRequest{Name: sp.name, URL: "https://" + sp.listen, CACert: cred.CACert, Region: sp.name, Cloud: "localhost"}
		if err := registerWhenReady(gctx, h, req, cred); err != nil {
			return fmt.Errorf("register controller %s: %w", sp.name, err)
		}
		info.Controllers = append(info.Controllers, DevController{Name: sp.name, Region: sp.name, URL: "https://" + sp.listen, DataDir: dir})
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
func registerWhenReady(ctx context.Context, h *hub.Server, req hub.AddControllerRequest, cred *spoke.AdminCredential) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cl, err := api.NewClient(api.ClientConfig{Addresses: cred.APIAddresses, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password, Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cl.Close()
	delay := 50 * time.Millisecond
	for {
		tok, err := cl.CreateHubToken(ctx, 10*time.Minute)
		if err == nil {
			req.JoinToken = tok.Token
			_, err = h.RegisterController(ctx, req, true)
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

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
