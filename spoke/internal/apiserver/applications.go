package apiserver

import (
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

var appNameRe = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]*[a-z][a-z0-9]*)*$`)

func appOf(r *http.Request) string { return chi.URLParam(r, "app") }

// typedConfig validates user config against the charm's options: typed
// values (from JSON or YAML) and user strings (parsed by option type).
// It returns the values to set and the keys to reset.
func typedConfig(cfg *charm.Config, typed map[string]any, strs map[string]string, reset []string) (map[string]any, []string, error) {
	set := map[string]any{}
	split := func(v charm.Settings, err error) error {
		if err != nil {
			return api.Errorf(api.CodeInvalid, "%v", err)
		}
		for k, val := range v {
			if val == nil {
				reset = append(reset, k)
			} else {
				set[k] = val
			}
		}
		return nil
	}
	if len(typed) > 0 {
		if err := split(cfg.ValidateSettings(numbersToGo(typed))); err != nil {
			return nil, nil, err
		}
	}
	if len(strs) > 0 {
		if err := split(cfg.ParseSettings(strs)); err != nil {
			return nil, nil, err
		}
	}
	for _, k := range reset {
		if _, ok := cfg.Options[k]; !ok {
			return nil, nil, api.Errorf(api.CodeInvalid, "unknown option %q", k)
		}
	}
	sort.Strings(reset)
	return set, reset, nil
}

// charmOf reads a charm and its parsed config and actions.
func (c *charmCache) charmOf(snap *state.Snapshot, sha string) (*api.Charm, *parsedCharm, error) {
	ch, err := lookup.Charm(snap, sha)
	if err != nil {
		return nil, nil, err
	}
	p, err := c.get(ch)
	return ch, p, err
}

func (s *applicationEndpoint) deploy(w http.ResponseWriter, r *http.Request) {
	var req api.DeployRequest
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if !appNameRe.MatchString(req.Application) {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "invalid application name %q: use lowercase letters, digits and hyphens, starting with a letter", req.Application))
		return
	}
	if req.NumUnits < 0 {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "num-units must not be negative"))
		return
	}
	if len(req.To) > req.NumUnits && req.NumUnits > 0 {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "%d placement directives for %d units", len(req.To), req.NumUnits))
		return
	}
	for _, p := range req.To {
		if _, err := charm.ParsePlacement(p); err != nil {
			reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "placement %q: %v", p, err))
			return
		}
	}
	cons, err := api.ParseConstraints(req.Constraints)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	ch, p, err := s.charms.charmOf(s.b.Store().Snapshot(), req.CharmSHA256)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	set, _, err := typedConfig(p.config, req.Config, req.ConfigStrs, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if err := checkOrigin(req.Base, req.Channel); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if err := checkStorage(ch, req.Storage); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	ups, err := s.resourceUploads(r.Context(), ch, req.Resources)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	var res state.AddApplicationResult
	idx, err := s.propose(r, state.AddApplicationType, &state.AddApplicationRequest{
		ModelUUID: modelOf(r), Name: req.Application, CharmSHA256: req.CharmSHA256, Config: set,
		Constraints: cons, Base: req.Base, NumUnits: req.NumUnits, Placement: req.To, Trust: req.Trust, Now: s.now(),
		OriginBase: req.Base, Channel: req.Channel, Storage: req.Storage, Resources: ups,
	}, &res)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusCreated, idx, deployResult(&res))
}

func deployResult(res *state.AddApplicationResult) *api.DeployResult {
	out := &api.DeployResult{Units: res.Units, Machines: res.Machines, Relations: res.Relations}
	if res.Application != nil {
		out.Application = *res.Application
	}
	return out
}

func (s *applicationEndpoint) listApplications(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	list, err := snap.ListApplications(modelOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, nonNil(list))
}

func (s *applicationEndpoint) getApplication(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	a, err := lookup.Application(snap, modelOf(r), appOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, a)
}

func (s *applicationEndpoint) removeApplication(w http.ResponseWriter, r *http.Request) {
	force, ok := boolParam(w, r, "force")
	if !ok {
		return
	}
	idx, err := s.propose(r, state.DestroyApplicationType, &state.DestroyApplicationRequest{ModelUUID: modelOf(r), App: appOf(r), Force: force}, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	w.Header().Set(api.HeaderIndex, itoa(idx))
	w.WriteHeader(http.StatusAccepted)
}

func (s *applicationEndpoint) applicationConfig(snap *state.Snapshot, model, app string) (*api.ApplicationConfig, error) {
	a, err := lookup.Application(snap, model, app)
	if err != nil {
		return nil, err
	}
	_, p, err := s.charms.charmOf(snap, a.CharmSHA256)
	if err != nil {
		return nil, err
	}
	out := &api.ApplicationConfig{Application: a.Name, Charm: a.CharmName, Settings: map[string]api.ConfigOption{}}
	for name, o := range p.config.Options {
		opt := api.ConfigOption{Type: string(o.Type), Description: o.Description, Default: o.Default, Source: "unset"}
		if o.Default != nil {
			opt.Value, opt.Source = o.Default, "default"
		}
		if v, ok := a.Config[name]; ok && v != nil {
			opt.Value, opt.Source = v, "user"
		}
		out.Settings[name] = opt
	}
	return out, nil
}

func (s *applicationEndpoint) getApplicationConfig(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	cfg, err := s.applicationConfig(snap, modelOf(r), appOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, cfg)
}

// decodeForApp decodes r's body into req and looks up the application
// the route names with its charm. On failure it has answered, and ok is
// false.
func (s *applicationEndpoint) decodeForApp(w http.ResponseWriter, r *http.Request, req any) (a *api.Application, ch *api.Charm, p *parsedCharm, ok bool) {
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, req); err != nil {
		reply.WriteError(w, r, err)
		return nil, nil, nil, false
	}
	snap := s.b.Store().Snapshot()
	a, err := lookup.Application(snap, modelOf(r), appOf(r))
	if err == nil {
		ch, p, err = s.charms.charmOf(snap, a.CharmSHA256)
	}
	if err != nil {
		reply.WriteError(w, r, err)
		return nil, nil, nil, false
	}
	return a, ch, p, true
}

func (s *applicationEndpoint) setApplicationConfig(w http.ResponseWriter, r *http.Request) {
	var req api.ConfigChange
	a, _, p, ok := s.decodeForApp(w, r, &req)
	if !ok {
		return
	}
	set, reset, err := typedConfig(p.config, req.Set, req.SetStrings, req.Reset)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	s.proposeAndShow(w, r, state.SetApplicationConfigType, &state.SetApplicationConfigRequest{ModelUUID: a.ModelUUID, App: a.Name, Set: set, Unset: reset},
		func(snap *state.Snapshot) (any, error) { return s.applicationConfig(snap, a.ModelUUID, a.Name) })
}

func (s *applicationEndpoint) addUnits(w http.ResponseWriter, r *http.Request) {
	var req api.AddUnitsRequest
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if req.NumUnits < 1 {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "num-units must be at least 1"))
		return
	}
	var res state.AddApplicationResult
	idx, err := s.propose(r, state.AddUnitsType, &state.AddUnitsRequest{
		ModelUUID: modelOf(r), App: appOf(r), N: req.NumUnits, Placement: req.To, Now: s.now(),
	}, &res)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusCreated, idx, deployResult(&res))
}

func (s *applicationEndpoint) scale(w http.ResponseWriter, r *http.Request) {
	appRequest(s, w, r, state.ScaleApplicationType, func(req api.ScaleRequest) (any, error) {
		if req.Scale < 0 {
			return nil, api.Errorf(api.CodeInvalid, "scale must not be negative")
		}
		return &state.ScaleApplicationRequest{ModelUUID: modelOf(r), App: appOf(r), Scale: req.Scale, Now: s.now()}, nil
	})
}

func (s *applicationEndpoint) expose(w http.ResponseWriter, r *http.Request) {
	appRequest(s, w, r, state.SetExposedType, func(req api.ExposeRequest) (any, error) {
		return &state.SetExposedRequest{ModelUUID: modelOf(r), App: appOf(r), Exposed: req.Exposed}, nil
	})
}

// setTrust trusts an application with the model's cloud credential, or no
// longer (juju trust [--remove]).
func (s *applicationEndpoint) setTrust(w http.ResponseWriter, r *http.Request) {
	appRequest(s, w, r, state.SetTrustType, func(req api.SetTrustRequest) (any, error) {
		return &state.SetTrustRequest{ModelUUID: modelOf(r), App: appOf(r), Trust: req.Trust}, nil
	})
}

// setConstraints sets the constraints of the application's new machines
// (juju set-constraints).
func (s *applicationEndpoint) setConstraints(w http.ResponseWriter, r *http.Request) {
	appRequest(s, w, r, state.SetConstraintsType, func(req api.SetConstraintsRequest) (any, error) {
		cons, err := api.ParseConstraints(req.Constraints)
		if err != nil {
			return nil, err
		}
		return &state.SetConstraintsRequest{ModelUUID: modelOf(r), App: appOf(r), Constraints: cons}, nil
	})
}

// appRequest serves a change to one application: it decodes the body as
// T, makes the command from it (or refuses it), proposes it and answers
// with the application as it is after.
func appRequest[T any](s *applicationEndpoint, w http.ResponseWriter, r *http.Request, t state.MessageType, command func(req T) (any, error)) {
	var req T
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	cmd, err := command(req)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	s.appCommand(w, r, t, cmd)
}

// setCharm refreshes an application to another uploaded charm (juju
// refresh). The checks that need the charms' contents are made here,
// before proposing: the command in the log stays what older controllers
// applied, so a replayed log gives the same state.
func (s *applicationEndpoint) setCharm(w http.ResponseWriter, r *http.Request) {
	var req api.SetCharmRequest
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	snap := s.b.Store().Snapshot()
	a, err := lookup.Application(snap, modelOf(r), appOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	ch, p, err := s.charms.charmOf(snap, req.CharmSHA256)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	switch {
	case ch.SHA256 == a.CharmSHA256:
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "application %q already runs this charm (%s revision %d)", a.Name, a.CharmName, a.CharmRevision))
		return
	case ch.Name != a.CharmName && !req.Switch:
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "cannot refresh %q from charm %q to charm %q: a charm of another name is a crossgrade (switch)", a.Name, a.CharmName, ch.Name))
		return
	}
	set, unset := keptSettings(p.config, a.Config)
	uset, ureset, err := typedConfig(p.config, req.Config, req.ConfigStrs, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	// The caller's values win over the old ones: the state applies Set
	// before Unset, so a key set here must not be unset too.
	unset = slices.DeleteFunc(unset, func(k string) bool { _, ok := uset[k]; return ok })
	for k, v := range uset {
		set[k] = v
	}
	unset = append(unset, ureset...)
	s.appCommand(w, r, state.SetCharmType, &state.SetCharmRequest{ModelUUID: a.ModelUUID, App: a.Name,
		CharmSHA256: ch.SHA256, ForceUnits: req.ForceUnits, Set: set, Unset: unset})
}

// keptSettings sorts an application's settings for its new charm: those
// the charm has an option for, converted to that option's type, are kept;
// those it has no option for, or whose type refuses the value, are dropped
// (as Juju's refresh filters the settings), so a charm never reads a value
// of the wrong type or one for an option it does not have.
func keptSettings(cfg *charm.Config, old map[string]any) (set map[string]any, unset []string) {
	set = map[string]any{}
	for k, v := range numbersToGo(old) {
		conv, err := cfg.ValidateSettings(map[string]any{k: v})
		if err != nil || conv[k] == nil {
			unset = append(unset, k)
			continue
		}
		if !reflect.DeepEqual(conv[k], v) {
			set[k] = conv[k]
		}
	}
	sort.Strings(unset)
	return set, unset
}

// appCommand proposes a command whose value is the application, and
// answers with the application as it is after the command.
func (s *applicationEndpoint) appCommand(w http.ResponseWriter, r *http.Request, t state.MessageType, req any) {
	s.proposeAndShow(w, r, t, req, func(snap *state.Snapshot) (any, error) { return lookup.Application(snap, modelOf(r), appOf(r)) })
}

// proposeAndShow proposes a command and, once this node has applied it,
// answers with what show reads from the state as it is after the command,
// at the command's index: a write's answer reads its own effect.
func (s *applicationEndpoint) proposeAndShow(w http.ResponseWriter, r *http.Request, t state.MessageType, req any, show func(*state.Snapshot) (any, error)) {
	idx, err := s.propose(r, t, req, nil)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if _, err := s.b.WaitRead(r.Context(), idx, false); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	v, err := show(s.b.Store().Snapshot())
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, idx, v)
}
