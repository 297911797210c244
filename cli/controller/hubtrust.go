package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// controllerOnly dials a controller (not a hub) for a command that only
// controllers serve.
func (a *Commands) controllerOnly(ctl, command string) (*modelcmd.Conn, error) {
	c, err := a.Dial(ctl)
	if err != nil {
		return nil, err
	}
	if c.Details.Hub {
		c.Client.Close()
		return nil, fmt.Errorf("%q is a hub: run '%s' against the controller itself (-c CONTROLLER)", c.Name, command)
	}
	return c, nil
}

// CreateHubTokenCmd is 'drover create-hub-token'.
func (a *Commands) CreateHubTokenCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
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
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl < 0 || ttl > 168*time.Hour {
				return modelcmd.Usagef("--ttl %s: between 1s and 168h", ttl)
			}
			return a.createHubToken(cmd.Context(), ctl.Name, ttl)
		},
	}
	ctl.Add(cmd)
	cmd.Flags().DurationVar(&ttl, "ttl", time.Hour, "how long the token stays valid")
	return cmd
}

func (a *Commands) createHubToken(ctx context.Context, ctl string, ttl time.Duration) error {
	c, err := a.controllerOnly(ctl, "create-hub-token")
	if err != nil {
		return err
	}
	defer c.Client.Close()
	tok, err := c.Client.CreateHubToken(ctx, ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.Stdout, tok.Token)
	addr := "ADDRESS"
	if len(c.Details.APIAddresses) > 0 {
		addr = c.Details.APIAddresses[0]
	}
	ca := "CONTROLLER_CA"
	if c.Details.DataDir != "" {
		// A controller bootstrapped here: its CA is in its data dir.
		if p := filepath.Join(c.Details.DataDir, "tls", "ca.crt"); isFile(p) {
			ca = p
		}
	}
	fmt.Fprintf(a.Stderr, "Single use, valid until %s. On the hub:\n  drover add-controller %s https://%s --ca %s --region REGION --join-token TOKEN\n",
		tok.Expires.Local().Format(time.RFC3339), c.Name, addr, ca)
	if ca == "CONTROLLER_CA" {
		fmt.Fprintf(a.Stderr, "(CONTROLLER_CA: a file with the controller's CA certificate, the ca-cert of 'drover show-controller %s')\n", c.Name)
	}
	return nil
}

// RemoveHubTrustCmd is 'drover remove-hub-trust'.
func (a *Commands) RemoveHubTrustCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var yes bool
	cmd := &cobra.Command{
		Use:   "remove-hub-trust",
		Short: "Make this controller stop trusting its hub",
		Long: `Makes the controller trust no hub (controller superusers): every node
refuses the tokens of the hub it trusted, so the hub can no longer reach its
models. Local users are unaffected. A hub registers the controller again
with a new token from 'drover create-hub-token'.`,
		Example: "  drover remove-hub-trust -c east -y",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.controllerOnly(ctl.Name, "remove-hub-trust")
			if err != nil {
				return err
			}
			defer c.Client.Close()
			if !yes {
				if err := a.Confirm(fmt.Sprintf("Controller %q will refuse every request from its hub.", c.Name)); err != nil {
					return err
				}
			}
			if err := c.Client.RemoveHubTrust(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Controller %q trusts no hub.\n", c.Name)
			return nil
		},
	}
	ctl.Add(cmd)
	modelcmd.AddYesFlags(cmd, &yes)
	return cmd
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
