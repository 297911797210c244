package modelcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
)

// callTimeout bounds one API attempt against one address.
const callTimeout = 30 * time.Second

// Conn is an open connection to one controller.
type Conn struct {
	Name    string
	Details *clientstore.ControllerDetails
	Account *clientstore.Account
	Client  *api.Client
}

// ModelConn is a connection plus the model a command works on.
type ModelConn struct {
	*Conn
	Model string // as the user names it: NAME, or OWNER/NAME for another's (ModelRef)
	UUID  string
}

// AddYesFlags adds -y/--yes and Juju's --no-prompt, which skip a command's
// confirmation.
func AddYesFlags(cmd *cobra.Command, yes *bool) {
	cmd.Flags().BoolVarP(yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(yes, "no-prompt", false, "same as --yes")
}

// ControllerOpt is the -c flag of controller commands.
type ControllerOpt struct{ Name string }

// Add adds -c to cmd.
func (o *ControllerOpt) Add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.Name, "controller", "c", "", "controller to operate on (default: $DROVER_CONTROLLER, else the current one)")
}

// ModelOpt is the -m flag of model commands.
type ModelOpt struct{ Ref string }

// Add adds -m to cmd.
func (o *ModelOpt) Add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.Ref, "model", "m", "", "model to operate in: [controller:]model (default: $DROVER_MODEL, else the current one)")
}

// SplitModelRef parses "[controller:]model"; either part may be empty.
func SplitModelRef(ref string) (controller, model string) {
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
	EnvController = "DROVER_CONTROLLER"
	EnvModel      = "DROVER_MODEL" // [controller:]model
)

// CurrentController is the controller a command uses when it is not told
// one, and the variable that named it ("" for the store's current one).
func (a *Env) CurrentController(s *clientstore.State) (name, from string) {
	if c, _ := SplitModelRef(a.Getenv(EnvModel)); c != "" {
		return c, EnvModel
	}
	if c := a.Getenv(EnvController); c != "" {
		return c, EnvController
	}
	return s.CurrentController, ""
}

// CurrentModel is the model a command uses on controller ctl when it is
// not told one: DROVER_MODEL's when it is on ctl (without a controller
// part, on the current controller), else the store's current model there.
func (a *Env) CurrentModel(s *clientstore.State, ctl string) string {
	if c, m := SplitModelRef(a.Getenv(EnvModel)); m != "" {
		if c == "" {
			c, _ = a.CurrentController(s)
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

// ControllerName resolves an explicit name or the current controller.
func (a *Env) ControllerName(s *clientstore.State, name string) (string, error) {
	from := ""
	if name == "" {
		name, from = a.CurrentController(s)
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

// Dial opens a client to a controller (empty: the current one).
func (a *Env) Dial(name string) (*Conn, error) {
	s, err := a.Store.Load()
	if err != nil {
		return nil, err
	}
	name, err = a.ControllerName(s, name)
	if err != nil {
		return nil, err
	}
	c, err := NewConn(name, s.Controllers[name], s.Accounts[name])
	if err == nil {
		a.AtHub = c.Details.Hub
		a.track(c)
	}
	return c, err
}

// NewConn opens a client to controller name (details d) as acct; a
// hub's session is renewed as it expires.
func NewConn(name string, d *clientstore.ControllerDetails, acct *clientstore.Account) (*Conn, error) {
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
		// client-wide index would make reads wait on the wrong one. Each
		// model's calls wait for its controller's (FindModel places it).
		cfg.ReadYourWrites = false
		cfg.ServerKind = "hub"
		if acct.Store != nil {
			idx, err := acct.Store.Indexes()
			if err != nil {
				return nil, err
			}
			cfg.Indexes = idx
		}
	} else if acct.Store != nil {
		idx, err := acct.Store.LastIndex(d.UUID)
		if err != nil {
			return nil, err
		}
		cfg.Index = idx
	}
	if acct.Token != "" {
		cfg.User, cfg.Password, cfg.Token = "", "", acct.Token
		cfg.RefreshToken = func(ctx context.Context) (string, error) { return refreshHubSession(ctx, name, d, acct) }
	}
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("controller %q in the client store is unusable: %w", name, err)
	}
	return &Conn{Name: name, Details: d, Account: acct, Client: c}, nil
}

// DialModel resolves -m (or the current model) and opens its controller.
func (a *Env) DialModel(ctx context.Context, ref string) (*ModelConn, error) {
	ctlName, model := SplitModelRef(ref)
	s, err := a.Store.Load()
	if err != nil {
		return nil, err
	}
	ctlName, err = a.ControllerName(s, ctlName)
	if err != nil {
		return nil, err
	}
	// Not logged in says so first: logging out also forgets the models.
	c, err := NewConn(ctlName, s.Controllers[ctlName], s.Accounts[ctlName])
	if err != nil {
		return nil, err
	}
	a.AtHub = c.Details.Hub
	a.track(c)
	if model == "" {
		model = a.CurrentModel(s, ctlName)
		if model == "" {
			c.Client.Close()
			return nil, fmt.Errorf("no current model on controller %q; add one with 'drover add-model NAME' or choose one with 'drover switch %s:MODEL'", ctlName, ctlName)
		}
	}
	m, err := a.FindModel(ctx, c, model)
	if err != nil {
		c.Client.Close()
		return nil, err
	}
	return &ModelConn{Conn: c, Model: ModelRef(*m, c.Account.User), UUID: m.UUID}, nil
}

// FindModel looks a model up by name ("owner/name" or a UUID also work),
// preferring the caller's own, and refreshes the store's cache.
func (a *Env) FindModel(ctx context.Context, c *Conn, ref string) (*api.Model, error) {
	models, err := c.Client.Models(ctx)
	if err != nil {
		return nil, err
	}
	m, err := PickModel(models, ref, c.Account.User)
	if err != nil {
		return nil, err
	}
	if m == nil {
		// The node that answered may lag behind a write this client did
		// not see (another user's, or one made before the store kept
		// indexes): only a consistent read, which reflects every
		// acknowledged write, may make the client forget the model.
		if models, err = c.Client.Models(ctx, api.ReadOptions{Consistent: true}); err != nil {
			return nil, err
		}
		if m, err = PickModel(models, ref, c.Account.User); err != nil {
			return nil, err
		}
	}
	if m == nil {
		if err := a.ForgetModel(c.Name, ref); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("model %q not found on controller %q; 'drover models' lists them", ref, c.Name)
	}
	if m.Index != nil { // a hub's entry: its calls go to that controller
		c.Client.PlaceModel(m.UUID, m.Index.ControllerUUID)
	}
	return m, a.RememberModel(c.Name, c.Account.User, *m, false)
}

// PickModel finds ref (a UUID, NAME or OWNER/NAME) among models as Juju
// does: an unqualified name that several owners use means user's own; nil
// when none matches.
func PickModel(models []api.Model, ref, user string) (*api.Model, error) {
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

// ModelRef is how the client names m to user, as Juju does: NAME for
// user's own models, OWNER/NAME for others' (the name alone would mean
// user's own model of that name, should there be one).
func ModelRef(m api.Model, user string) string {
	if m.Owner == "" || m.Owner == user {
		return m.Name
	}
	return m.Owner + "/" + m.Name
}

// RememberModel caches m under the name user knows it by (ModelRef).
func (a *Env) RememberModel(ctl, user string, m api.Model, makeCurrent bool) error {
	return a.Store.Update(func(s *clientstore.State) error {
		if _, ok := s.Controllers[ctl]; !ok {
			return nil
		}
		cm := s.ModelsOf(ctl)
		ref := ModelRef(m, user)
		cm.Models[ref] = clientstore.ModelDetails{UUID: m.UUID, Owner: m.Owner}
		if makeCurrent {
			cm.CurrentModel = ref
		}
		return nil
	})
}

// ForgetModel drops model name from the cache of controller ctl (and
// as its current model).
func (a *Env) ForgetModel(ctl, name string) error {
	return a.Store.Update(func(s *clientstore.State) error {
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

// EachOf does one thing to each of names, going on past a failure: each
// failure is printed (do's error says what it was doing), and the command
// fails, with failed ("units could not be removed"), if any did.
func (a *Env) EachOf(names []string, failed string, do func(name string) error) error {
	n := 0
	for _, name := range names {
		if err := do(name); err != nil {
			fmt.Fprintf(a.Stderr, "ERROR %s\n", Explain(err, a.AtHub))
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("%d of %d %s", n, len(names), failed)
	}
	return nil
}

// Explain turns an error into text that says what to do about it; hub
// says whether the command spoke to a hub (whose remedies differ).
func Explain(err error, hub bool) string {
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

// The hints Explain adds, by error code, to an answer that says no remedy.
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

// WithModel dials the model ref names (DialModel), runs fn with it and
// closes it.
func (a *Env) WithModel(ctx context.Context, ref string, fn func(mc *ModelConn) error) error {
	mc, err := a.DialModel(ctx, ref)
	if err != nil {
		return err
	}
	defer mc.Client.Close()
	return fn(mc)
}

// ModelStatus checks a command's --format, then reads the model's status
// (machines, show-machine, show-unit). The caller closes mc's client.
func (a *Env) ModelStatus(ctx context.Context, format *FormatOpt, ref string) (mc *ModelConn, fs *api.FullStatus, err error) {
	if err := format.Check(); err != nil {
		return nil, nil, err
	}
	if mc, err = a.DialModel(ctx, ref); err != nil {
		return nil, nil, err
	}
	if fs, err = mc.Client.Model(mc.UUID).Status(ctx); err != nil {
		mc.Client.Close()
		return nil, nil, err
	}
	return mc, fs, nil
}
