// Command droverd runs Drover's servers: `droverd spoke` (a controller
// node), `droverd hub` (the federation endpoint) and `droverd dev` (a
// whole federation on one machine, for development). Its commands, help
// and flags follow drover's (cobra, --long-flags).
package main

//go:generate go test -run TestFlagReference -update .

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/gcpolicy"
	"github.com/droverhq/drover/spoke"
)

func main() {
	if err := gcpolicy.Apply(); err != nil {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		os.Exit(2)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs one command line and returns the exit code: 0 ok, 1 error, 2
// usage. Errors go to stderr as "ERROR <message>", as drover's do.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(stdout, stderr, defaultDevStateDir())
	root.SetArgs(args)
	var err error
	if _, _, ferr := root.Find(args); ferr != nil && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		err = usageError{fmt.Errorf("unknown command %q; run 'droverd help' for the list of commands", args[0])}
	} else {
		err = root.ExecuteContext(ctx)
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ERROR %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "ERROR %v\n", err)
		return 1
	}
}

// usageError marks a command line mistake (exit code 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// newRoot is droverd's command tree; output (help included) goes to
// stdout, logs to stderr. defaultStateDir is droverd dev's --state-dir
// default.
func newRoot(stdout, stderr io.Writer, defaultStateDir string) *cobra.Command {
	root := &cobra.Command{
		Use:   "droverd",
		Short: "Drover's servers: controller nodes, hub replicas, and a whole local federation",
		Long: `droverd runs Drover's servers. 'droverd spoke' is one controller node (what
'drover bootstrap' and 'drover enable-ha' start), 'droverd hub' one hub
replica in front of every controller.

'droverd dev' runs a whole federation on this machine for development: a
private PostgreSQL, an embedded OpenFGA and OIDC issuer, the hub, and two
controllers (east and west) registered with it ('make dev').`,
		Example: `  droverd dev
  droverd spoke --data-dir /var/lib/drover/c1 --bootstrap --name c1
  droverd hub --state-dir /var/lib/drover/hub --dev-identity`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		Version:           spoke.Version,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())}
	})
	root.AddCommand(newSpokeCmd(stderr), newHubCmd(stderr), newDevCmd(stdout, stderr, defaultStateDir),
		newTeardownCmd(stdout), newVersionCmd(stdout))
	root.InitDefaultHelpCmd()
	return root
}

// noArgs refuses arguments left after the flags.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s: unexpected arguments %q; usage: %s", cmd.Name(), args, cmd.UseLine())}
	}
	return nil
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version",
		Example: "  droverd version",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(stdout, spoke.Version)
			return nil
		},
	}
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

// newSpokeCmd is `droverd spoke`; its logs go to stderr.
func newSpokeCmd(stderr io.Writer) *cobra.Command {
	f := &spokeFlags{}
	cmd := &cobra.Command{
		Use:   "spoke --data-dir DIR [--listen HOST:PORT] (--bootstrap | --join ADDR --join-token T)",
		Short: "Run a controller (spoke) node",
		Long: `Runs one controller node. With --bootstrap on an empty data dir it creates a
controller: a CA (the API is HTTPS from the start; clients pin the CA), and an
admin credential written to DIR/controller.json. With --join it joins an
existing controller as a new raft voter. A node restarted on its data dir
resumes where it was.`,
		Example: `  droverd spoke --data-dir /var/lib/drover/c1 --bootstrap --name c1
  droverd spoke --data-dir /var/lib/drover/c1-2 --listen 127.0.0.1:17170 --join 127.0.0.1:17070 --join-token TOKEN`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSpoke(cmd.Context(), f, stderr)
		},
	}
	defineSpokeFlags(cmd.Flags(), f)
	return cmd
}

// defineSpokeFlags defines the flags of `droverd spoke` into f.
func defineSpokeFlags(fs *pflag.FlagSet, f *spokeFlags) {
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
}

func runSpoke(ctx context.Context, f *spokeFlags, stderr io.Writer) error {
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
