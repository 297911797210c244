package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// The models command: the models a controller or a hub lists.

type modelSummary struct {
	// Name is OWNER/NAME (ModelRef for nobody), and ShortName the model's
	// own name, as Juju's models and show-model output them.
	Name           string `json:"name"`
	ShortName      string `json:"short-name"`
	UUID           string `json:"model-uuid"`
	ControllerUUID string `json:"controller-uuid"`
	// ControllerName is the controller's name in the client's store; at a
	// hub, HUB/CONTROLLER, as show-model names it.
	ControllerName string          `json:"controller-name"`
	Owner          string          `json:"owner"`
	Life           api.Life        `json:"life"`
	Status         modelStatusView `json:"status"`
	Machines       int             `json:"machines"`
	Units          int             `json:"units"`
	Apps           int             `json:"applications"`
	Current        bool            `json:"current,omitempty"`
	CreatedAt      time.Time       `json:"created-at"`
	Cloud          string          `json:"cloud"`
	Region         string          `json:"region,omitempty"`
	// ModelType, Type (the cloud's), IsController, Access and
	// LastConnection are Juju's: every Drover model is a machine model
	// ("iaas") on the local substrate, none is the controller's own.
	ModelType      string `json:"model-type"`
	Type           string `json:"type"`
	IsController   bool   `json:"is-controller"`
	Access         string `json:"access,omitempty"`
	LastConnection string `json:"last-connection,omitempty"`
	// Controller is the controller behind a hub that hosts the model.
	Controller string `json:"controller,omitempty"`
	// ControllerStatus is "disconnected" when the hub has lost that
	// controller: the rest is what it last heard.
	ControllerStatus string `json:"controller-status,omitempty"`
}

// modelStatusView is a model's status as Juju's models prints it.
type modelStatusView struct {
	Current string     `json:"current"`
	Message string     `json:"message,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
}

// ModelsCmd is 'drover models'.
func (a *Commands) ModelsCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var format modelcmd.FormatOpt
	var o modelsOpts
	cmd := &cobra.Command{
		Use:     "models",
		Aliases: []string{"list-models"},
		Short:   "List the models on a controller",
		Long: `Lists the models you can see on the controller; the current one is marked with *.

At a hub, as in Juju: --user USER lists the models USER can read (an
email, a service account's client id or an identity id; for the
administrators of USER's organization), of those you can read too; --all
lists every model, for the hub's administrators, whose listing is every
model anyway. A controller's own listing is every model on it.`,
		Example: "  drover models\n  drover models -c lab --format json\n  drover models --user bob@example.com",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			o.format = format.Value
			return a.models(cmd.Context(), ctl.Name, o)
		},
	}
	ctl.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	cmd.Flags().BoolVar(&o.uuid, "uuid", false, "show model UUIDs")
	cmd.Flags().StringVar(&o.user, "user", "", "at a hub: the models this user can read (their organization's administrators)")
	cmd.Flags().BoolVar(&o.all, "all", false, "every model (at a hub: its administrators only)")
	return cmd
}

// modelsOpts are the models command's flags.
type modelsOpts struct {
	format    string
	uuid, all bool
	user      string
}

func (a *Commands) models(ctx context.Context, ctlName string, o modelsOpts) error {
	c, err := a.Dial(ctlName)
	if err != nil {
		return err
	}
	defer c.Client.Close()
	if err := checkModelsScope(ctx, c, o); err != nil {
		return err
	}
	var models []api.Model
	if o.user != "" {
		models, err = c.Client.ModelsOf(ctx, o.user)
	} else {
		models, err = c.Client.Models(ctx)
	}
	if err != nil {
		return err
	}
	s, err := a.Store.Load()
	if err != nil {
		return err
	}
	current, currentUUID := a.CurrentModel(s, c.Name), ""
	viewer := c.Account.User // model names are shown relative to whose models they are
	if o.user != "" {
		current, viewer = "", o.user
	}
	if current != "" {
		if m, _ := modelcmd.PickModel(models, current, c.Account.User); m != nil {
			currentUUID = m.UUID
		}
	}
	sort.Slice(models, func(i, j int) bool { return models[i].Name < models[j].Name })
	out := []modelSummary{} // [] when there are none, as Juju prints it
	for _, m := range models {
		ms := summarize(ctx, c, m, currentUUID)
		ms.Access, ms.LastConnection = modelAccess(c, m, viewer, a.Now())
		out = append(out, ms)
	}
	if o.format != "tabular" {
		set := map[string]any{"models": out}
		if current != "" { // omitted without one, as Juju does
			set["current-model"] = current
		}
		return modelcmd.WriteFormatted(a.Stdout, o.format, set)
	}
	return a.writeModels(c, out, viewer, o.uuid)
}

// checkModelsScope refuses --all and --user where they do not apply:
// --user and --all only at a hub, --all for its administrators only.
func checkModelsScope(ctx context.Context, c *modelcmd.Conn, o modelsOpts) error {
	if (o.user != "" || o.all) && c.Details.Hub {
		if o.all && o.user != "" {
			return errors.New("--all and --user go alone")
		}
		if o.all {
			var who struct{ Access string }
			if err := c.Client.Call(ctx, http.MethodGet, "/v1/whoami", nil, nil, &who); err != nil {
				return err
			}
			if who.Access != "superuser" {
				return fmt.Errorf("--all lists every model at hub %q: its administrators only (without it you see the models you may read)", c.Name)
			}
		}
	} else if o.user != "" {
		return fmt.Errorf("--user lists another user's models at a hub; controller %q's listing is every model on it", c.Name)
	}
	return nil
}

// summarize is m's line in the listing: from the hub's index when it
// has one, else from the model's status.
func summarize(ctx context.Context, c *modelcmd.Conn, m api.Model, currentUUID string) modelSummary {
	var fs *api.FullStatus
	if m.Index == nil {
		fs, _ = c.Client.Model(m.UUID).Status(ctx) // counts and cloud stay unknown without it
	}
	return summaryOf(m, fs, c.Name, c.Details.UUID, currentUUID)
}

// summaryOf is m's line in the listing of controller ctlName (UUID
// ctlUUID): its counts, cloud and controller from a hub's index entry
// when m has one, else from fs, the model's status, when known.
func summaryOf(m api.Model, fs *api.FullStatus, ctlName, ctlUUID, currentUUID string) modelSummary {
	ms := modelSummary{Name: modelcmd.ModelRef(m, ""), ShortName: m.Name, UUID: m.UUID, Owner: m.Owner, Life: m.Life,
		Status:  modelStatusView{Current: m.Status.Status, Message: m.Status.Message},
		Current: m.UUID == currentUUID, CreatedAt: m.CreatedAt, ModelType: "iaas", Type: "local",
		ControllerName: ctlName, ControllerUUID: ctlUUID}
	if !m.Status.Since.IsZero() {
		since := m.Status.Since
		ms.Status.Since = &since
	}
	if x := m.Index; x != nil {
		// A hub answers from its index: no call per model.
		ms.Apps, ms.Machines, ms.Units, ms.Controller = x.Applications, x.Machines, x.Units, x.Controller
		ms.ControllerStatus = x.ControllerStatus
		ms.ControllerName, ms.ControllerUUID = ctlName+"/"+x.Controller, x.ControllerUUID
		ms.Cloud, ms.Region = x.Cloud, x.Region
	} else if fs != nil {
		ms.Machines, ms.Apps, ms.Cloud, ms.Region = len(fs.Machines), len(fs.Applications), fs.Model.Cloud, fs.Model.Region
		for _, app := range fs.Applications {
			ms.Units += len(app.Units)
		}
	}
	return ms
}

// modelAccess is viewer's access to m and their last connection to it,
// as Juju's models lists them, where known: a hub says so for the users
// it shows; a controller's superuser administers every model. Unknown is
// "".
func modelAccess(c *modelcmd.Conn, m api.Model, viewer string, now time.Time) (string, string) {
	if x := m.Index; x != nil {
		for _, u := range x.Users {
			if u.Name != viewer {
				continue
			}
			if u.LastLogin != nil {
				return u.Access, modelcmd.FriendlyAgo(*u.LastLogin, now)
			}
			return u.Access, "never connected"
		}
		return "", ""
	}
	if c.Account.Access == "superuser" || (m.Owner != "" && m.Owner == viewer) {
		return "admin", ""
	}
	return "", ""
}

// writeModels is the models table, naming each model as viewer knows it.
func (a *Commands) writeModels(c *modelcmd.Conn, out []modelSummary, viewer string, showUUID bool) error {
	fmt.Fprintf(a.Stdout, "Controller: %s\n\n", c.Name)
	t := &modelcmd.Table{Color: a.Terminal}
	hdr := []any{"Model", "Cloud/Region", "Type", "Status", "Owner", "Machines", "Units", "Access", "Last connection"}
	hub := c.Details.Hub || slices.ContainsFunc(out, func(m modelSummary) bool { return m.Controller != "" })
	if hub {
		hdr = slices.Insert(hdr, 1, any("Controller"))
	}
	if showUUID {
		hdr = append(hdr, "UUID")
	}
	t.Row(hdr...)
	for _, m := range out {
		name := modelcmd.ModelRef(api.Model{Name: m.ShortName, Owner: m.Owner}, viewer)
		if m.Current {
			name += "*"
		}
		status := m.Status.Current
		if m.Life != api.Alive && m.Life != "" {
			status = string(m.Life)
		}
		st := modelcmd.StatusCell(status)
		if m.ControllerStatus != "" { // what the hub last heard, from a controller it lost
			st = modelcmd.Colored(status+" (controller "+m.ControllerStatus+")", modelcmd.ColorRed)
		}
		row := []any{name, modelcmd.OrDash(strings.Trim(m.Cloud+"/"+m.Region, "/")), m.Type, st, modelcmd.OrDash(m.Owner), // an adopted model may have no owner yet
			m.Machines, m.Units, modelcmd.OrDash(m.Access), modelcmd.OrDash(m.LastConnection)}
		if hub {
			row = slices.Insert(row, 1, any(modelcmd.OrDash(m.Controller)))
		}
		if showUUID {
			row = append(row, m.UUID)
		}
		t.Row(row...)
	}
	return t.Write(a.Stdout)
}
