package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *App) machinesCmd() *cobra.Command {
	var mo modelOpt
	var format formatOpt
	cmd := &cobra.Command{
		Use:     "machines",
		Aliases: []string{"list-machines"},
		Short:   "List the model's machines",
		Long: `Lists the model's machines as 'juju machines' does: the Machine section of
'drover status', with each machine's state, address, instance id and base.
--format json and yaml give status's "machines" object.`,
		Example: "  drover machines\n  drover machines -m lab --format json",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			mc, err := a.dialModel(cmd.Context(), mo.ref)
			if err != nil {
				return err
			}
			defer mc.client.Close()
			fs, err := mc.client.Status(cmd.Context(), mc.uuid)
			if err != nil {
				return err
			}
			if format.value != "tabular" {
				return writeFormatted(a.Stdout, format.value, fs.Machines)
			}
			if len(fs.Machines) == 0 {
				fmt.Fprintf(a.Stderr, "Model %q has no machines.\n", mc.model)
				return nil
			}
			t := &table{color: a.Terminal}
			machineRows(t, fs.Machines)
			return t.write(a.Stdout)
		},
	}
	mo.add(cmd)
	format.add(cmd, "tabular", "tabular", "json", "yaml")
	return cmd
}

func (a *App) removeMachineCmd() *cobra.Command {
	var mo modelOpt
	var force bool
	cmd := &cobra.Command{
		Use:   "remove-machine ID...",
		Short: "Remove machines",
		Long: `Removes machines that host no units: each is released by its provisioner
and goes. A machine that hosts units is refused, naming one; --force
removes its units at once (without their teardown hooks) and then the
machine.`,
		Example: "  drover remove-machine 3\n  drover remove-machine 1 2 --force",
		Args:    minArgs(1, "at least one machine id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, id := range args {
				if !isMachineID(id) {
					return usagef("%q is not a machine id (such as 3 or 3/lxd/0)", id)
				}
			}
			mc, err := a.dialModel(cmd.Context(), mo.ref)
			if err != nil {
				return err
			}
			defer mc.client.Close()
			return a.eachOf(args, "machines could not be removed", func(id string) error {
				if err := mc.client.RemoveMachine(cmd.Context(), mc.uuid, id, force); err != nil {
					return fmt.Errorf("removing machine %s: %w", id, err)
				}
				fmt.Fprintf(a.Stderr, "removing machine %s\n", id)
				return nil
			})
		},
	}
	mo.add(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "remove the machines' units at once, then the machines")
	return cmd
}
