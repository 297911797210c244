package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/google/uuid"
)

var modelNameRe = regexp.MustCompile(`^[a-z0-9]+[a-z0-9-]*$`)

// DefaultModelConfig is the config every new model starts with
// (api.ModelConfigDefaults, which the CLI also reads).
func DefaultModelConfig() map[string]any { return api.ModelConfigDefaults() }

// validateModelConfig types the keys Drover interprets; other keys are
// kept as given (Juju accepts arbitrary keys too).
func validateModelConfig(set map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range set {
		switch k {
		case "update-status-hook-interval":
			str, ok := v.(string)
			if !ok {
				return nil, api.Errorf(api.CodeInvalid, "model config %s: want a duration such as \"5m\", got %v", k, v)
			}
			d, err := time.ParseDuration(str)
			if err != nil || d < time.Second || d > 60*time.Minute {
				return nil, api.Errorf(api.CodeInvalid, "model config %s: want a duration between 1s and 60m, got %q", k, str)
			}
			out[k] = str
		case "automatically-retry-hooks":
			switch b := v.(type) {
			case bool:
				out[k] = b
			case string:
				pb, err := strconv.ParseBool(b)
				if err != nil {
					return nil, api.Errorf(api.CodeInvalid, "model config %s: want true or false, got %q", k, b)
				}
				out[k] = pb
			default:
				return nil, api.Errorf(api.CodeInvalid, "model config %s: want true or false, got %v", k, v)
			}
		default:
			if k == "" {
				return nil, api.Errorf(api.CodeInvalid, "model config: empty key")
			}
			out[k] = v
		}
	}
	return out, nil
}

func (s *modelEndpoint) listModels(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	all, err := snap.ListModels()
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	// A model being imported is no one's until its migration activates
	// it: unlisted, so its name finds nothing either.
	list := all[:0:0]
	for _, m := range all {
		if !m.Importing() {
			list = append(list, m)
		}
	}
	reply.Indexed(w, http.StatusOK, at, nonNil(list))
}

func (s *modelEndpoint) addModel(w http.ResponseWriter, r *http.Request) {
	var req api.AddModelRequest
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if !modelNameRe.MatchString(req.Name) || len(req.Name) > 63 {
		reply.WriteError(w, r, api.Errorf(api.CodeInvalid, "invalid model name %q: use lowercase letters, digits and hyphens, starting with a letter or digit, at most 63 characters", req.Name))
		return
	}
	if req.Owner == "" {
		req.Owner = callerOf(r.Context()).Name
	}
	cfg := DefaultModelConfig()
	extra, err := validateModelConfig(numbersToGo(req.Config))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	for k, v := range extra {
		cfg[k] = v
	}
	var m api.Model
	idx, err := s.propose(r, state.AddModelType, &state.AddModelRequest{
		UUID: uuid.NewString(), Name: req.Name, Owner: req.Owner, Config: cfg, Now: s.now(),
	}, &m)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusCreated, idx, &m)
}

func (s *modelEndpoint) getModel(w http.ResponseWriter, r *http.Request) {
	if m, at, ok := s.readModel(w, r); ok {
		reply.Indexed(w, http.StatusOK, at, m)
	}
}

// readModel reads the model the route names, as the query asks (read).
// On failure it has answered, and ok is false.
func (s *modelEndpoint) readModel(w http.ResponseWriter, r *http.Request) (*api.Model, uint64, bool) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return nil, 0, false
	}
	m, err := lookup.Model(snap, modelOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return nil, 0, false
	}
	return m, at, true
}

// destroyModel makes the model dying; an empty model is removed at once.
// With force every application and machine is removed first, in the same
// command.
func (s *modelEndpoint) destroyModel(w http.ResponseWriter, r *http.Request) {
	force, ok := boolParam(w, r, "force")
	if !ok {
		return
	}
	uuid := modelOf(r)
	snap := s.b.Store().Snapshot()
	if _, err := lookup.Model(snap, uuid); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	var m api.Model
	idx, err := s.propose(r, state.DestroyModelType, &state.DestroyModelRequest{ModelUUID: uuid, Now: s.now(), Force: force}, &m)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if m.Life == api.Dead { // it had nothing in it, and is gone
		w.Header().Set(api.HeaderIndex, strconv.FormatUint(idx, 10))
		w.WriteHeader(http.StatusNoContent)
		return
	}
	reply.Indexed(w, http.StatusAccepted, idx, &m)
}

// setModelConstraints sets the model's constraints (juju
// set-model-constraints), checked and normalized as an application's.
func (s *modelEndpoint) setModelConstraints(w http.ResponseWriter, r *http.Request) {
	var req api.SetModelConstraintsRequest
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	cons, err := api.ParseConstraints(req.Constraints)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	var m api.Model
	idx, err := s.propose(r, state.SetModelConstraintsType, &state.SetModelConstraintsRequest{ModelUUID: modelOf(r), Constraints: cons}, &m)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, idx, &m)
}

// getModelConstraints answers the model's constraints: a model path of
// its own, which a hub relays (its GET of the model answers from its
// index, without them).
func (s *modelEndpoint) getModelConstraints(w http.ResponseWriter, r *http.Request) {
	if m, at, ok := s.readModel(w, r); ok {
		reply.Indexed(w, http.StatusOK, at, api.ModelConstraints{Constraints: m.Constraints})
	}
}

func (s *modelEndpoint) getModelConfig(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	m, err := lookup.Model(snap, modelOf(r))
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	reply.Indexed(w, http.StatusOK, at, m.Config)
}

func (s *modelEndpoint) setModelConfig(w http.ResponseWriter, r *http.Request) {
	var req api.ConfigChange
	if err := reply.Decode(w, r, s.cfg.MaxBodySize, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	set := numbersToGo(req.Set)
	for k, v := range req.SetStrings {
		if v == "" {
			req.Reset = append(req.Reset, k)
			continue
		}
		if set == nil {
			set = map[string]any{}
		}
		set[k] = v
	}
	set, err := validateModelConfig(set)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	// Resetting a key Drover gives a default restores the default, as in
	// Juju; other keys go.
	defaults := DefaultModelConfig()
	var unset []string
	for _, k := range req.Reset {
		if d, ok := defaults[k]; ok {
			if set == nil {
				set = map[string]any{}
			}
			set[k] = d
			continue
		}
		unset = append(unset, k)
	}
	req.Reset = unset
	// The command's value is the changed keys only (nil for a key now
	// unset): a model's whole config can be large, and the caller knows
	// the rest.
	var changed map[string]any
	idx, err := s.propose(r, state.SetModelConfigType, &state.SetModelConfigRequest{ModelUUID: modelOf(r), Set: set, Unset: req.Reset}, &changed)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if changed == nil {
		changed = map[string]any{}
	}
	reply.Indexed(w, http.StatusOK, idx, changed)
}

// numbersToGo turns json.Number values (from a UseNumber decoder) into
// int64 or float64, recursively.
func numbersToGo(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = numberToGo(v)
	}
	return out
}

func numberToGo(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		if f, err := t.Float64(); err == nil {
			return f
		}
		return t.String()
	case map[string]any:
		return numbersToGo(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = numberToGo(e)
		}
		return out
	}
	return v
}

func statusHistoryLimit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 20, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, reply.BadParam("limit", v, "want a number from 1 to 1000")
	}
	return n, nil
}

func (s *modelEndpoint) statusHistory(w http.ResponseWriter, r *http.Request) {
	limit, err := statusHistoryLimit(r)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	q := r.URL.Query()
	entity, kind := q.Get("entity"), q.Get("kind")
	if entity == "" {
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "query parameter entity is required (a unit, application or machine name)"))
		return
	}
	if kind == "" {
		kind = api.StatusKindWorkload
	}
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	h, err := snap.StatusHistory(modelOf(r), entity, kind, limit)
	if err != nil {
		reply.WriteError(w, r, fmt.Errorf("status history: %w", err))
		return
	}
	reply.Indexed(w, http.StatusOK, at, nonNil(h))
}
