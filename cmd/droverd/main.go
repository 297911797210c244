// Command droverd runs Drover's servers: `droverd spoke` (a controller
// node), `droverd hub` (the federation endpoint) and `droverd dev`
// (everything local, for development).
package main

//go:generate go test -run TestFlagReference -update .

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/droverhq/drover/internal/gcpolicy"
	"github.com/droverhq/drover/spoke"
)

const usage = `Usage: droverd COMMAND [flags]

Commands:
  spoke     run a controller (spoke) node
  hub       run a hub replica (OIDC, permissions, audit in front of every controller)
  dev       run a local controller on embedded defaults (used by 'make dev')
  teardown  stop every local machine agent and workload of a controller's data dir
  version   print the version

Run 'droverd COMMAND --help' for a command's flags.
`

func main() {
	if err := gcpolicy.Apply(); err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		os.Exit(2)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "spoke":
		err = runSpoke(ctx, args[1:], stderr)
	case "hub":
		err = runHub(ctx, args[1:], stderr)
	case "dev":
		err = runDev(ctx, args[1:], stdout, stderr)
	case "teardown":
		err = runTeardown(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, spoke.Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "droverd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ERROR %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "ERROR %v\n", err)
		return 1
	}
}

type usageError struct{ error }

// parseFlags parses args into fs: --help is flag.ErrHelp, any other
// mistake a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	return nil
}

// noArgs refuses arguments left after the flags.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments: %v", fs.Args())}
	}
	return nil
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", level)}
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// spokeFlags are the flags of `droverd spoke`.
type spokeFlags struct {
	cfg             spoke.Config
	logLevel, hubCA string
}

// newSpokeFlags defines the flags of `droverd spoke`; its usage goes to
// stderr.
func newSpokeFlags(stderr io.Writer) (*flag.FlagSet, *spokeFlags) {
	fs := flag.NewFlagSet("droverd spoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &spokeFlags{}
	cfg := &f.cfg
	fs.StringVar(&cfg.DataDir, "data-dir", "", "node data directory (required)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:17070", "HTTPS API address")
	fs.StringVar(&cfg.RaftListen, "raft-listen", "", "raft address (default: the API port + 1)")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", "", "serve /metrics only here, over plain HTTP (an internal address), not on --listen (without it, --listen serves /metrics to this machine alone)")
	fs.StringVar(&cfg.Advertise, "advertise", "", "API address other nodes and clients use (default: --listen)")
	fs.StringVar(&cfg.Name, "name", "drover", "controller name (with --bootstrap)")
	fs.BoolVar(&cfg.Bootstrap, "bootstrap", false, "create a new one-node controller if the data dir is empty")
	fs.StringVar(&cfg.Join, "join", "", "API address of a node of the controller to join")
	fs.StringVar(&cfg.JoinToken, "join-token", "", "join token from 'drover enable-ha' or POST /v1/controller/join-tokens")
	fs.StringVar(&cfg.MachineDir, "machine-dir", "", "local machines' directory, shared by the nodes on one host (default: <data-dir>/machines; as root, where machine users can reach it: /var/lib/drover-machines/<data-dir name>-<hash>)")
	fs.StringVar(&cfg.HubURL, "hub-url", "", "trust this hub: accept its signed bearer tokens (its JWKS is HUB/.well-known/jwks.json)")
	fs.StringVar(&cfg.HubJWKSURL, "hub-jwks", "", "the hub's JWKS URL (default: --hub-url + /.well-known/jwks.json)")
	fs.StringVar(&f.hubCA, "hub-ca", "", "PEM file of the hub's CA (to fetch its JWKS)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprint(stderr, spokeUsage)
		fs.PrintDefaults()
	}
	return fs, f
}

const spokeUsage = `Usage: droverd spoke --data-dir DIR [--listen HOST:PORT] (--bootstrap | --join ADDR --join-token T)

Runs one controller node. With --bootstrap on an empty data dir it creates a
controller: a CA (the API is HTTPS from the start; clients pin the CA), and an
admin credential written to DIR/controller.json. With --join it joins an
existing controller as a new raft voter. A node restarted on its data dir
resumes where it was.

Flags:
`

func runSpoke(ctx context.Context, args []string, stderr io.Writer) error {
	fs, f := newSpokeFlags(stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	cfg := f.cfg
	if cfg.DataDir == "" {
		return usageError{errors.New("--data-dir is required")}
	}
	if f.hubCA != "" {
		b, err := os.ReadFile(f.hubCA)
		if err != nil {
			return usageError{fmt.Errorf("--hub-ca: %w", err)}
		}
		cfg.HubCACert = b
	}
	if (f.hubCA != "" || cfg.HubJWKSURL != "") && cfg.HubURL == "" {
		return usageError{errors.New("--hub-ca and --hub-jwks need --hub-url")}
	}
	logger, err := newLogger(stderr, f.logLevel)
	if err != nil {
		return err
	}
	cfg.Logger = logger
	// The node records its own PID, so that destroy-controller and
	// kill-controller find it however it was started: by 'drover
	// bootstrap' or enable-ha (which write it too), by hand, or by a
	// service manager after a restart.
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "droverd.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return err
	}
	return spoke.Run(ctx, cfg)
}
