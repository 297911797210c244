package hubadmin

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// SigningKeysCmd is signing-keys: the hub's signing keys (its
// administrators).
func (a *Commands) SigningKeysCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:   "signing-keys",
		Short: "List the hub's signing keys (hub administrators)",
		Long: `Lists the keys with which the hub signs its sessions and the tokens its
controllers accept, the current one first: when each was made, until when
a retired one's tokens are still accepted, and the key-encryption secret
that seals it in the hub's database ("plain" for a key stored unsealed: the
hub was started without --key-encryption-key).`,
		Example: "  drover signing-keys\n  drover signing-keys --format json",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			var out struct {
				Keys []api.SigningKey `json:"keys"`
			}
			if err := a.HubDo(cmd.Context(), ctl.Name, http.MethodGet, "/v1/hub/signing-keys", nil, nil, &out); err != nil {
				return err
			}
			if format.Value != "tabular" {
				return modelcmd.WriteFormatted(a.Stdout, format.Value, out)
			}
			t := &modelcmd.Table{}
			t.Row("Key", "State", "Created", "Accepted until", "Sealed with")
			for _, k := range out.Keys {
				state, until := "current", "-"
				if !k.Current {
					state = "retired"
				}
				if k.AcceptedUntil != nil {
					until = k.AcceptedUntil.UTC().Format(modelcmd.TableTimeLayout)
				}
				sealed := k.SealedWith
				if sealed == "" {
					sealed = "plain"
				}
				t.Row(k.KID, state, k.CreatedAt.UTC().Format(modelcmd.TableTimeLayout), until, sealed)
			}
			return t.Write(a.Stdout)
		},
	}
	ctl.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	return cmd
}

// RotateSigningKeyCmd is rotate-signing-key (the hub's administrators).
func (a *Commands) RotateSigningKeyCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var revoke, yes bool
	cmd := &cobra.Command{
		Use:   "rotate-signing-key",
		Short: "Make the hub sign with a new key now (hub administrators)",
		Long: `Makes the hub sign with a new key from now on, on every replica. The hub
rotates its key by itself every 30 days; this is for when it must not wait.

Without --revoke-previous the previous keys stay accepted until what they
signed has expired, so nobody notices. With it they are deleted at once:
for a key that may have leaked. Sessions signed with them are then refused
and renew by themselves (drover and the dashboard hold refresh tokens,
which no key signs). Controllers fetch the hub's keys again when they meet
the new one (or within 5 minutes), and then end the watches and log
follows opened with a revoked key's token; those drover opened through
the hub reopen by themselves.`,
		Example: "  drover rotate-signing-key\n  drover rotate-signing-key --revoke-previous -y",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if revoke && !yes {
				if err := a.Confirm("This will refuse every session and controller token signed with the hub's previous keys."); err != nil {
					return err
				}
			}
			var res api.RotateSigningKeyResult
			if err := a.HubDo(cmd.Context(), ctl.Name, http.MethodPost, "/v1/hub/signing-keys", nil,
				api.RotateSigningKeyRequest{RevokePrevious: revoke}, &res); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "The hub signs with key %s from now on.\n", res.Current)
			if len(res.Revoked) > 0 {
				fmt.Fprintf(a.Stdout, "Revoked: %s.\n", strings.Join(res.Revoked, ", "))
			}
			return nil
		},
	}
	ctl.Add(cmd)
	cmd.Flags().BoolVar(&revoke, "revoke-previous", false, "refuse what the previous keys signed from now on")
	modelcmd.AddYesFlags(cmd, &yes)
	return cmd
}
