package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/spf13/cobra"
)

// callTimeout bounds one API attempt against one address.
const callTimeout = 30 * time.Second

// conn is an open connection to one controller.
type conn struct {
	name    string
	details *ControllerDetails
	account *Account
	client  *api.Client
}

// modelConn is a connection plus the model a command works on.
type modelConn struct {
	*conn
	model string // as the user names it: NAME, or OWNER/NAME for another's (modelRef)
	uuid  string
}

// addYesFlags adds -y/--yes and Juju's --no-prompt, which skip a command's
// confirmation.
func addYesFlags(cmd *cobra.Command, yes *bool) {
	cmd.Flags().BoolVarP(yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(yes, "no-prompt", false, "same as --yes")
}

// controllerOpt is the -c flag of controller commands.
type controllerOpt struct{ name string }

func (o *controllerOpt) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.name, "controller", "c", "", "controller to operate on (default: $DROVER_CONTROLLER, else the current one)")
}

// modelOpt is the -m flag of model commands.
type modelOpt struct{ ref string }

func (o *modelOpt) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.ref, "model", "m", "", "model to operate in: [controller:]model (default: $DROVER_MODEL, else the current one)")
}

// splitModelRef parses "[controller:]model"; either part may be empty.
func splitModelRef(ref string) (controller, model string) {
	if c, m, ok := strings.Cut(ref, ":"); ok {
		return c, m
	}
	return "", ref
}

// The environment overrides the client store's current controller and
// model for one process, as JUJU_CONTROLLER and JUJU_MODEL do for juju: a
// script or CI job works on its own without 'drover switch', which would
// change them for every other command sharing the store.
const (
	envController = "DROVER_CONTROLLER"
	envModel      = "DROVER_MODEL" // [controller:]model
)

// currentController is the controller a command uses when it is not told
// one, and the variable that named it ("" for the store's current one).
func (a *App) currentController(s *State) (name, from string) {
	if c, _ := splitModelRef(a.Getenv(envModel)); c != "" {
		return c, envModel
	}
	if c := a.Getenv(envController); c != "" {
		return c, envController
	}
	return s.CurrentController, ""
}

// currentModel is the model a command uses on controller ctl when it is
// not told one: DROVER_MODEL's when it is on ctl (without a controller
// part, on the current controller), else the store's current model there.
func (a *App) currentModel(s *State, ctl string) string {
	if c, m := splitModelRef(a.Getenv(envModel)); m != "" {
		if c == "" {
			c, _ = a.currentController(s)
		}
		if c == ctl {
			return m
		}
	}
	if cm := s.Models[ctl]; cm != nil {
		return cm.CurrentModel
	}
	return ""
}

// controllerName resolves an explicit name or the current controller.
func (a *App) controllerName(s *State, name string) (string, error) {
	from := ""
	if name == "" {
		name, from = a.currentController(s)
	}
	if _, ok := s.Controllers[name]; !ok && from != "" {
		return "", fmt.Errorf("controller %q (named by %s) not found; 'drover controllers' lists the known ones", name, from)
	}
	if name == "" {
		if len(s.Controllers) == 0 {
			return "", errors.New("no controllers registered; run 'drover bootstrap' to create one, or 'drover login https://HUB:PORT --ca FILE' to use a hub")
		}
		return "", errors.New("no current controller; choose one with 'drover switch CONTROLLER'")
	}
	if _, ok := s.Controllers[name]; !ok {
		return "", fmt.Errorf("controller %q not found; 'drover controllers' lists the known ones", name)
	}
	return name, nil
}

// dial opens a client to a controller (empty: the current one).
func (a *App) dial(name string) (*conn, error) {
	s, err := a.store.Load()
	if err != nil {
		return nil, err
	}
	name, err = a.controllerName(s, name)
	if err != nil {
		return nil, err
	}
	c, err := newConn(name, s.Controllers[name], s.Accounts[name])
	if err == nil {
		a.atHub = c.details.Hub
	}
	return c, err
}

func newConn(name string, d *ControllerDetails, acct *Account) (*conn, error) {
	if acct == nil {
		return nil, fmt.Errorf("no credentials for controller %q in the client store", name)
	}
	if d.Hub && acct.Token == "" {
		return nil, fmt.Errorf("not logged in to hub %q; run 'drover login' to log in again", name)
	}
	cfg := api.ClientConfig{
		Addresses: d.APIAddresses, CACert: []byte(d.CACert),
		User: acct.User, Password: acct.Password, Timeout: callTimeout,
		ReadYourWrites: true,
	}
	if d.Hub {
		// Raft indexes belong to each controller behind the hub: one
		// client-wide index would make reads wait on the wrong one.
		cfg.ReadYourWrites = false
		cfg.ServerKind = "hub"
	}
	if acct.Token != "" {
		cfg.User, cfg.Password, cfg.Token = "", "", acct.Token
		cfg.RefreshToken = func(ctx context.Context) (string, error) { return refreshHubSession(ctx, name, d, acct) }
	}
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("controller %q in the client store is unusable: %w", name, err)
	}
	return &conn{name: name, details: d, account: acct, client: c}, nil
}

// dialModel resolves -m (or the current model) and opens its controller.
func (a *App) dialModel(ctx context.Context, ref string) (*modelConn, error) {
	ctlName, model := splitModelRef(ref)
	s, err := a.store.Load()
	if err != nil {
		return nil, err
	}
	ctlName, err = a.controllerName(s, ctlName)
	if err != nil {
		return nil, err
	}
	// Not logged in says so first: logging out also forgets the models.
	c, err := newConn(ctlName, s.Controllers[ctlName], s.Accounts[ctlName])
	if err != nil {
		return nil, err
	}
	a.atHub = c.details.Hub
	if model == "" {
		model = a.currentModel(s, ctlName)
		if model == "" {
			c.client.Close()
			return nil, fmt.Errorf("no current model on controller %q; add one with 'drover add-model NAME' or choose one with 'drover switch %s:MODEL'", ctlName, ctlName)
		}
	}
	m, err := a.findModel(ctx, c, model)
	if err != nil {
		c.client.Close()
		return nil, err
	}
	return &modelConn{conn: c, model: modelRef(*m, c.account.User), uuid: m.UUID}, nil
}

// findModel looks a model up by name ("owner/name" or a UUID also work),
// preferring the caller's own, and refreshes the store's cache.
func (a *App) findModel(ctx context.Context, c *conn, ref string) (*api.Model, error) {
	models, err := c.client.Models(ctx)
	if err != nil {
		return nil, err
	}
	m, err := pickModel(models, ref, c.account.User)
	if err != nil {
		return nil, err
	}
	if m == nil {
		_ = a.forgetModel(c.name, ref) // a stale cache entry is harmless
		return nil, fmt.Errorf("model %q not found on controller %q; 'drover models' lists them", ref, c.name)
	}
	return m, a.rememberModel(c.name, c.account.User, *m, false)
}

// pickModel finds ref (a UUID, NAME or OWNER/NAME) among models as Juju
// does: an unqualified name that several owners use means user's own; nil
// when none matches.
func pickModel(models []api.Model, ref, user string) (*api.Model, error) {
	owner, name, hasOwner := strings.Cut(ref, "/")
	if !hasOwner {
		owner, name = "", ref
	}
	var found []api.Model
	for _, m := range models {
		if m.UUID == ref {
			return &m, nil
		}
		if m.Name == name && (owner == "" || m.Owner == owner) {
			found = append(found, m)
		}
	}
	switch {
	case len(found) == 1:
		return &found[0], nil
	case len(found) == 0:
		return nil, nil
	}
	for _, m := range found {
		if m.Owner == user {
			return &m, nil
		}
	}
	return nil, fmt.Errorf("model name %q is ambiguous; name it as OWNER/%s", name, name)
}

// modelRef is how the client names m to user, as Juju does: NAME for
// user's own models, OWNER/NAME for others' (the name alone would mean
// user's own model of that name, should there be one).
func modelRef(m api.Model, user string) string {
	if m.Owner == "" || m.Owner == user {
		return m.Name
	}
	return m.Owner + "/" + m.Name
}

// rememberModel caches m under the name user knows it by (modelRef).
func (a *App) rememberModel(ctl, user string, m api.Model, makeCurrent bool) error {
	return a.store.Update(func(s *State) error {
		if _, ok := s.Controllers[ctl]; !ok {
			return nil
		}
		cm := s.ModelsOf(ctl)
		ref := modelRef(m, user)
		cm.Models[ref] = ModelDetails{UUID: m.UUID, Owner: m.Owner}
		if makeCurrent {
			cm.CurrentModel = ref
		}
		return nil
	})
}

func (a *App) forgetModel(ctl, name string) error {
	return a.store.Update(func(s *State) error {
		cm := s.Models[ctl]
		if cm == nil {
			return nil
		}
		delete(cm.Models, name)
		if cm.CurrentModel == name {
			cm.CurrentModel = ""
		}
		return nil
	})
}

// explain turns an error into text that says what to do about it; hub
// says whether the command spoke to a hub (whose remedies differ).
// eachOf does one thing to each of names, going on past a failure: each
// failure is printed (do's error says what it was doing), and the command
// fails, with failed ("units could not be removed"), if any did.
func (a *App) eachOf(names []string, failed string, do func(name string) error) error {
	n := 0
	for _, name := range names {
		if err := do(name); err != nil {
			fmt.Fprintf(a.Stderr, "ERROR %s\n", explain(err, a.atHub))
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("%d of %d %s", n, len(names), failed)
	}
	return nil
}

func explain(err error, hub bool) string {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return err.Error()
	}
	msg := err.Error()
	if strings.HasSuffix(msg, ")") {
		return msg // the server said what to do
	}
	hints := controllerHints
	if hub {
		hints = hubHints
	}
	if h, ok := hints[ae.Code]; ok {
		return msg + "\n(" + h + ")"
	}
	return msg
}

// The hints explain adds, by error code, to an answer that says no remedy.
var (
	controllerHints = map[api.Code]string{
		api.CodeUnavailable:  "is the controller running? 'drover show-controller' lists its addresses; a local one is started by 'drover bootstrap'",
		api.CodeUnauthorized: "the controller rejected the credentials in the client store; re-register the controller",
		api.CodeForbidden:    "your user lacks the access this needs; ask a controller or model admin",
		api.CodeTimeout:      "check 'drover status' before retrying: the change may have been applied",
	}
	hubHints = map[api.Code]string{
		api.CodeUnavailable:  "is the hub running? 'drover show-controller' shows its address",
		api.CodeUnauthorized: "the hub session has ended and could not be renewed; run 'drover login' again",
		api.CodeForbidden:    "your user lacks the access this needs; ask an administrator of the model, its organization or the hub",
		api.CodeTimeout:      "check 'drover status' before retrying: the change may have been applied",
	}
)

// withModel dials the model ref names (dialModel), runs fn with it and
// closes it.
func (a *App) withModel(ctx context.Context, ref string, fn func(mc *modelConn) error) error {
	mc, err := a.dialModel(ctx, ref)
	if err != nil {
		return err
	}
	defer mc.client.Close()
	return fn(mc)
}

// modelStatus checks a command's --format, then reads the model's status
// (machines, show-machine, show-unit). The caller closes mc's client.
func (a *App) modelStatus(ctx context.Context, format *formatOpt, ref string) (mc *modelConn, fs *api.FullStatus, err error) {
	if err := format.check(); err != nil {
		return nil, nil, err
	}
	if mc, err = a.dialModel(ctx, ref); err != nil {
		return nil, nil, err
	}
	if fs, err = mc.client.Status(ctx, mc.uuid); err != nil {
		mc.client.Close()
		return nil, nil, err
	}
	return mc, fs, nil
}
