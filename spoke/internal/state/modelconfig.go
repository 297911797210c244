package state

import (
	"fmt"

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
		if old, err := t.configRow(model, k); err != nil {
			return nil, err
		} else if old != nil {
			e.CreateIndex = old.CreateIndex
		}
		if err := t.put(tableModelConfig, e); err != nil {
			return nil, err
		}
		t.config.wrote(model, k, e)
		changed[k] = e.Value
	}
	for _, k := range unset {
		old, err := t.configRow(model, k)
		if err != nil {
			return nil, err
		}
		if old != nil {
			if err := t.del(tableModelConfig, old); err != nil {
				return nil, err
			}
			t.config.wrote(model, k, nil)
		}
		changed[k] = nil
	}
	return changed, nil
}

// configRow returns model's config row for key as the transaction sees it:
// written (or deleted) earlier in the transaction, else as stored before
// it. It never reads the config table through the write transaction:
// memdb answers a read of an index the transaction has modified from a
// clone of it, and cloning makes the radix tree forget every node the
// transaction has already copied, so each config write of a
// group-committed batch would copy its whole path from the root again.
func (t *Txn) configRow(model, key string) (*ModelConfigEntry, error) {
	if e, ok := t.config.row(model, key); ok {
		return e, nil
	}
	return first[ModelConfigEntry](&t.before, tableModelConfig, "id", model, key)
}

// configWrites records the config rows a transaction has written, so that
// configRow sees them: every write to the config table goes through
// setModelConfigKeys or removeModel, which record it here.
type configWrites struct {
	rows    map[configKey]*ModelConfigEntry // nil: deleted
	removed map[string]bool                 // models whose stored rows are all gone
}

type configKey struct{ model, key string }

func (w *configWrites) wrote(model, key string, e *ModelConfigEntry) {
	if w.rows == nil {
		w.rows = map[configKey]*ModelConfigEntry{}
	}
	w.rows[configKey{model, key}] = e
}

// removedModel records that every config row of model is deleted.
func (w *configWrites) removedModel(model string) {
	for k := range w.rows {
		if k.model == model {
			delete(w.rows, k)
		}
	}
	if w.removed == nil {
		w.removed = map[string]bool{}
	}
	w.removed[model] = true
}

// row is the transaction's own version of a row, if it has one (nil when
// deleted).
func (w *configWrites) row(model, key string) (*ModelConfigEntry, bool) {
	if e, ok := w.rows[configKey{model, key}]; ok {
		return e, true
	}
	return nil, w.removed[model]
}

// modelConfigID is the primary index of model config, byte for byte the
// key compound(str("ModelUUID"), str("Key")) would build ("model\x00key\x00"),
// without reflection: memdb computes it twice per config write (for the
// new row and the one it replaces) on every node.
type modelConfigID struct{}

func (modelConfigID) FromObject(obj any) (bool, []byte, error) {
	e, ok := obj.(*ModelConfigEntry)
	if !ok {
		return false, nil, fmt.Errorf("model config index: %T is not a *ModelConfigEntry", obj)
	}
	if e.ModelUUID == "" || e.Key == "" {
		return false, nil, nil
	}
	return true, modelConfigKey(e.ModelUUID, e.Key, true), nil
}

// FromArgs takes the model UUID and the key.
func (modelConfigID) FromArgs(args ...any) ([]byte, error) {
	model, key, err := modelConfigArgs(2, args)
	if err != nil {
		return nil, err
	}
	return modelConfigKey(model, key, true), nil
}

// PrefixFromArgs takes the model UUID and a key prefix, or a prefix of the
// model UUID alone: (model, "") lists one model's rows.
func (modelConfigID) PrefixFromArgs(args ...any) ([]byte, error) {
	model, key, err := modelConfigArgs(len(args), args)
	if err != nil {
		return nil, err
	}
	if len(args) == 1 {
		return []byte(model), nil
	}
	return modelConfigKey(model, key, false), nil
}

func modelConfigArgs(n int, args []any) (model, key string, err error) {
	if len(args) != n || n < 1 || n > 2 {
		return "", "", fmt.Errorf("model config index: want (model, key), got %d arguments", len(args))
	}
	var ok bool
	if model, ok = args[0].(string); !ok {
		return "", "", fmt.Errorf("model config index: model is %T, not a string", args[0])
	}
	if n == 2 {
		if key, ok = args[1].(string); !ok {
			return "", "", fmt.Errorf("model config index: key is %T, not a string", args[1])
		}
	}
	return model, key, nil
}

func modelConfigKey(model, key string, terminated bool) []byte {
	b := make([]byte, 0, len(model)+len(key)+2)
	b = append(append(append(b, model...), 0), key...)
	if terminated {
		b = append(b, 0)
	}
	return b
}
