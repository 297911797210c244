package state

import (
	"github.com/droverhq/drover/api"
)

// ModelConfigEntry is one key of a model's config. Config lives in its own
// table, a row per key, so that setting one key costs the same however
// large the config is (a config stored inside the model row had to be
// copied whole on every write, which dominated the FSM under write load).
// Readers see the assembled map in api.Model.Config. The table has no
// "model" index: its primary key (model, key) already lists a model's rows
// by prefix, and a second index would double the radix-tree work of every
// config write, which every node pays.
type ModelConfigEntry struct {
	ModelUUID string `json:"model-uuid"`
	Key       string `json:"key"`
	Value     any    `json:"value"`
	api.Meta
}

// ModelConfig returns a model's config as a map (empty if none is set).
func (r *reader) ModelConfig(model string) (map[string]any, error) {
	index, args := byModel(tableModelConfig, model)
	rows, err := list[ModelConfigEntry](r, tableModelConfig, index, args...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(rows))
	for _, e := range rows {
		out[e.Key] = e.Value
	}
	return out, nil
}

// withConfig returns a copy of the stored model row with its config.
func (r *reader) withConfig(m *api.Model) (*api.Model, error) {
	if m == nil {
		return nil, nil
	}
	cfg, err := r.ModelConfig(m.UUID)
	if err != nil {
		return nil, err
	}
	c := *m
	c.Config = cfg
	return &c, nil
}

// setModelConfigKeys writes config rows: set keys are upserted, unset keys
// deleted. It returns the changed keys with their new values (nil when
// unset).
func (t *Txn) setModelConfigKeys(model string, set map[string]any, unset []string) (map[string]any, error) {
	changed := make(map[string]any, len(set)+len(unset))
	for k, v := range set {
		e := &ModelConfigEntry{ModelUUID: model, Key: k, Value: copyAny(v)}
		if old, err := first[ModelConfigEntry](&t.reader, tableModelConfig, "id", model, k); err != nil {
			return nil, err
		} else if old != nil {
			e.CreateIndex = old.CreateIndex
		}
		if err := t.put(tableModelConfig, e); err != nil {
			return nil, err
		}
		changed[k] = e.Value
	}
	for _, k := range unset {
		old, err := first[ModelConfigEntry](&t.reader, tableModelConfig, "id", model, k)
		if err != nil {
			return nil, err
		}
		if old != nil {
			if err := t.del(tableModelConfig, old); err != nil {
				return nil, err
			}
		}
		changed[k] = nil
	}
	return changed, nil
}
