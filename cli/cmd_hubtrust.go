package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
)

// controllerOnly dials a controller (not a hub) for a command that only
// controllers serve.
func (a *App) controllerOnly(ctl, command string) (*conn, error) {
	c, err := a.dial(ctl)
	if err != nil {
		return nil, err
	}
	if c.details.Hub {
		c.client.Close()
		return nil, fmt.Errorf("%q is a hub: run '%s' against the controller itself (-c CONTROLLER)", c.name, command)
	}
	return c, nil
}

func (a *App) createHubTokenCmd() *cobra.Command {
	var ctl controllerOpt
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "create-hub-token",
		Short: "Create a token with which a hub registers this controller",
		Long: `Prints a single-use token (controller superusers). A hub administrator
passes it to 'drover add-controller NAME URL --ca CA --region R --join-token T'
on the hub: the hub hands it back to this controller with the hub's URL and
CA, and from then on the controller accepts the tokens that hub signs. The
token works once, and only until --ttl has passed.`,
		Example: "  drover create-hub-token -c east\n  drover create-hub-token --ttl 15m",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl < 0 || ttl > 168*time.Hour {
				return usagef("--ttl %s: between 1s and 168h", ttl)
			}
			return a.createHubToken(cmd.Context(), ctl.name, ttl)
		},
	}
	ctl.add(cmd)
	cmd.Flags().DurationVar(&ttl, "ttl", time.Hour, "how long the token stays valid")
	return cmd
}

func (a *App) createHubToken(ctx context.Context, ctl string, ttl time.Duration) error {
	c, err := a.controllerOnly(ctl, "create-hub-token")
	if err != nil {
		return err
	}
	defer c.client.Close()
	tok, err := c.client.CreateHubToken(ctx, ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.Stdout, tok.Token)
	addr := "ADDRESS"
	if len(c.details.APIAddresses) > 0 {
		addr = c.details.APIAddresses[0]
	}
	ca := "CONTROLLER_CA"
	if c.details.DataDir != "" {
		// A controller bootstrapped here: its CA is in its data dir.
		if p := filepath.Join(c.details.DataDir, "tls", "ca.crt"); isFile(p) {
			ca = p
		}
	}
	fmt.Fprintf(a.Stderr, "Single use, valid until %s. On the hub:\n  drover add-controller %s https://%s --ca %s --region REGION --join-token TOKEN\n",
		tok.Expires.Local().Format(time.RFC3339), c.name, addr, ca)
	if ca == "CONTROLLER_CA" {
		fmt.Fprintf(a.Stderr, "(CONTROLLER_CA: a file with the controller's CA certificate, the ca-cert of 'drover show-controller %s')\n", c.name)
	}
	return nil
}

func (a *App) removeHubTrustCmd() *cobra.Command {
	var ctl controllerOpt
	var yes bool
	cmd := &cobra.Command{
		Use:   "remove-hub-trust",
		Short: "Make this controller stop trusting its hub",
		Long: `Makes the controller trust no hub (controller superusers): every node
refuses the tokens of the hub it trusted, so the hub can no longer reach its
models. Local users are unaffected. A hub registers the controller again
with a new token from 'drover create-hub-token'.`,
		Example: "  drover remove-hub-trust -c east -y",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.controllerOnly(ctl.name, "remove-hub-trust")
			if err != nil {
				return err
			}
			defer c.client.Close()
			if !yes {
				if err := a.confirm(fmt.Sprintf("Controller %q will refuse every request from its hub.", c.name)); err != nil {
					return err
				}
			}
			if err := c.client.RemoveHubTrust(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Controller %q trusts no hub.\n", c.name)
			return nil
		},
	}
	ctl.add(cmd)
	addYesFlags(cmd, &yes)
	return cmd
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
