package application

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// IntegrateCmd is 'drover integrate'.
func (a *Commands) IntegrateCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	cmd := &cobra.Command{
		Use:     "integrate APP[:ENDPOINT] APP[:ENDPOINT]",
		Aliases: []string{"relate", "add-relation"},
		Short:   "Integrate two applications (add a relation)",
		Long: `Relates an endpoint of one application to an endpoint of another. Endpoints
may be left out when only one pair of endpoints matches (same interface,
opposite roles); when several do, the error lists the candidates: name the
endpoints then.`,
		Example: "  drover integrate web kv\n  drover integrate web:db kv:kv",
		Args:    modelcmd.ExactArgs(2, "two application endpoints"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				rel, err := mc.Client.Model(mc.UUID).Integrate(cmd.Context(), args[0], args[1])
				if err != nil {
					if api.CodeOf(err) == api.CodeInvalid && strings.Contains(err.Error(), "ambiguous relation") {
						return fmt.Errorf("%w\nname the endpoints, e.g. 'drover integrate APP:ENDPOINT APP:ENDPOINT'", err)
					}
					return err
				}
				fmt.Fprintf(a.Stderr, "Integrated %s (relation id %d)\n", rel.Key, rel.ID)
				return nil
			})
		},
	}
	mo.Add(cmd)
	return cmd
}

// RemoveRelationCmd is 'drover remove-relation'.
func (a *Commands) RemoveRelationCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var force bool
	cmd := &cobra.Command{
		Use:   "remove-relation APP[:ENDPOINT] APP[:ENDPOINT] | RELATION_ID",
		Short: "Remove a relation",
		Long: `Removes a relation, named by its two ends or by its id (as 'drover status'
shows it). The units leave the relation (departed, then broken hooks).`,
		Example: "  drover remove-relation web kv\n  drover remove-relation 3",
		Args:    modelcmd.RangeArgs(1, 2, "two endpoints or a relation id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				var (
					id  int
					err error
				)
				if len(args) == 1 {
					if id, err = strconv.Atoi(args[0]); err != nil || id < 0 {
						return modelcmd.Usagef("%q is not a relation id; name both ends or give the id", args[0])
					}
				} else {
					rels, err := mc.Client.Model(mc.UUID).Relations(cmd.Context())
					if err != nil {
						return err
					}
					if id, err = matchRelation(rels, args[0], args[1]); err != nil {
						return err
					}
				}
				if err := mc.Client.Model(mc.UUID).RemoveRelation(cmd.Context(), id, force); err != nil {
					return err
				}
				fmt.Fprintf(a.Stderr, "removing relation %d\n", id)
				return nil
			})
		},
	}
	mo.Add(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "remove at once, without waiting for the units' agents")
	return cmd
}

// matchRelation finds the one relation between two "app[:endpoint]" ends.
func matchRelation(rels []api.Relation, a, b string) (int, error) {
	matches := func(e api.RelationEndpoint, spec string) bool {
		app, ep, hasEP := strings.Cut(spec, ":")
		return e.Application == app && (!hasEP || e.Name == ep)
	}
	var found []api.Relation
	for _, r := range rels {
		if len(r.Endpoints) != 2 {
			continue
		}
		e0, e1 := r.Endpoints[0], r.Endpoints[1]
		if (matches(e0, a) && matches(e1, b)) || (matches(e0, b) && matches(e1, a)) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("no relation between %s and %s; 'drover status --relations' lists them", a, b)
	case 1:
		return found[0].ID, nil
	}
	var keys []string
	for _, r := range found {
		keys = append(keys, fmt.Sprintf("%d (%s)", r.ID, r.Key))
	}
	return 0, fmt.Errorf("ambiguous: %s and %s are related more than once: %s; name the endpoints or give the id", a, b, strings.Join(keys, ", "))
}
