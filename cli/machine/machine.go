package machine

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/status"
)

// MachinesCmd is 'drover machines'.
func (a *Commands) MachinesCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:     "machines",
		Aliases: []string{"list-machines"},
		Short:   "List the model's machines",
		Long: `Lists the model's machines as 'juju machines' does: the Machine section of
'drover status', with each machine's state, address, instance id and base.
--format json and yaml give status's "machines" object.`,
		Example: "  drover machines\n  drover machines -m lab --format json",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			mc, fs, err := a.ModelStatus(cmd.Context(), &format, mo.Ref)
			if err != nil {
				return err
			}
			defer mc.Client.Close()
			if format.Value != "tabular" {
				return modelcmd.WriteFormatted(a.Stdout, format.Value, fs.Machines)
			}
			if len(fs.Machines) == 0 {
				fmt.Fprintf(a.Stderr, "Model %q has no machines.\n", mc.Model)
				return nil
			}
			t := &modelcmd.Table{Color: a.Terminal}
			status.MachineRows(t, fs.Machines)
			return t.Write(a.Stdout)
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	return cmd
}

// ShowMachineCmd is 'drover show-machine'.
func (a *Commands) ShowMachineCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:     "show-machine ID...",
		Short:   "Show machines' details",
		Long:    `Shows machines as 'juju show-machine' does: the model, and each machine as status's "machines" object has it.`,
		Example: "  drover show-machine 0\n  drover show-machine 0 1 --format json",
		Args:    modelcmd.MinArgs(1, "at least one machine id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			mc, fs, err := a.ModelStatus(cmd.Context(), &format, mo.Ref)
			if err != nil {
				return err
			}
			defer mc.Client.Close()
			out := map[string]api.MachineStatus{}
			for _, id := range args {
				m, ok := fs.Machines[id]
				if !ok {
					return fmt.Errorf("machine %q not found in model %q; 'drover machines' lists them", id, mc.Model)
				}
				out[id] = m
			}
			return modelcmd.WriteFormatted(a.Stdout, format.Value, map[string]any{"model": fs.Model.Name, "machines": out})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "yaml", "yaml", "json")
	return cmd
}

// AddMachineCmd is 'drover add-machine'.
func (a *Commands) AddMachineCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var n int
	var base, constraints string
	cmd := &cobra.Command{
		Use:   "add-machine [-n N]",
		Short: "Add empty machines to the model",
		Long: `Adds empty machines, as 'juju add-machine' does: the model's provisioner
starts them, and 'deploy --to ID' or 'add-unit --to ID' puts units on them.
-n adds several (at most 100).`,
		Example: "  drover add-machine\n  drover add-machine -n 3 --base ubuntu@24.04",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 1 || n > 100 {
				return modelcmd.Usagef("-n %d: want 1 to 100 machines", n)
			}
			if _, err := api.ParseConstraints(constraints); err != nil {
				return modelcmd.Usagef("--constraints: %v", err)
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				machines, err := mc.Client.Model(mc.UUID).AddMachines(cmd.Context(), api.AddMachinesRequest{NumMachines: n, Base: base, Constraints: constraints})
				if err != nil {
					return err
				}
				for _, m := range machines {
					fmt.Fprintf(a.Stderr, "created machine %s\n", m.ID)
				}
				return nil
			})
		},
	}
	mo.Add(cmd)
	cmd.Flags().IntVarP(&n, "num-machines", "n", 1, "how many machines")
	cmd.Flags().StringVar(&base, "base", "", "OS base of the machines, e.g. ubuntu@24.04")
	cmd.Flags().StringVar(&constraints, "constraints", "", "machine constraints, e.g. \"mem=4G cores=2\"")
	return cmd
}

// RemoveMachineCmd is 'drover remove-machine'.
func (a *Commands) RemoveMachineCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var force bool
	cmd := &cobra.Command{
		Use:   "remove-machine ID...",
		Short: "Remove machines",
		Long: `Removes machines that host no units: each is released by its provisioner
and goes. A machine that hosts units is refused, naming one; --force
removes its units at once (without their teardown hooks) and then the
machine.`,
		Example: "  drover remove-machine 3\n  drover remove-machine 1 2 --force",
		Args:    modelcmd.MinArgs(1, "at least one machine id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, id := range args {
				if !modelcmd.IsMachineID(id) {
					return modelcmd.Usagef("%q is not a machine id (such as 3 or 3/lxd/0)", id)
				}
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				return a.EachOf(args, "machines could not be removed", func(id string) error {
					if err := mc.Client.Model(mc.UUID).RemoveMachine(cmd.Context(), id, force); err != nil {
						return fmt.Errorf("removing machine %s: %w", id, err)
					}
					fmt.Fprintf(a.Stderr, "removing machine %s\n", id)
					return nil
				})
			})
		},
	}
	mo.Add(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "remove the machines' units at once, then the machines")
	return cmd
}
