package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/droverhq/drover/spoke"
)

// runDev starts a local controller on embedded defaults and prints how to
// reach it. The hub, identity provider and second region join it as their
// issues land (see README).
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("droverd dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	home, _ := os.UserHomeDir()
	stateDir := fs.String("state-dir", filepath.Join(home, ".local", "share", "drover", "dev"), "where the local federation keeps its state across restarts")
	listen := fs.String("listen", "127.0.0.1:17070", "controller API address")
	logLevel := fs.String("log-level", "warn", "log level")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	dir := filepath.Join(*stateDir, "spoke-east")
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- spoke.Run(ctx, spoke.Config{DataDir: dir, Listen: *listen, Name: "east", Bootstrap: true, Logger: logger, Ready: ready})
	}()
	select {
	case err := <-errc:
		return err
	case <-ready:
	}
	cred, err := spoke.ReadAdminCredential(dir)
	if err != nil {
		return err
	}
	caFile := filepath.Join(*stateDir, "ca.crt")
	if err := os.WriteFile(caFile, []byte(cred.CACert), 0o644); err != nil {
		return err
	}
	info := map[string]any{
		"controller": cred.ControllerName, "api-addresses": cred.APIAddresses, "ca-file": caFile,
		"user": cred.User, "password": cred.Password,
	}
	b, _ := json.MarshalIndent(info, "", "  ")
	if err := os.WriteFile(filepath.Join(*stateDir, "dev.json"), append(b, '\n'), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(stdout, `Drover dev controller %q is running.
  API:       https://%s  (CA: %s)
  user:      %s
  password:  %s
  details:   %s
Try:  curl --cacert %s -u %s:%s https://%s/v1/controller
Press Ctrl-C to stop; state is kept in %s.
`, cred.ControllerName, cred.APIAddresses[0], caFile, cred.User, cred.Password,
		filepath.Join(*stateDir, "dev.json"), caFile, cred.User, cred.Password, cred.APIAddresses[0], *stateDir)
	return <-errc
}
