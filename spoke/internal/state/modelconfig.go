package state

import (
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// ModelConfig returns a model's config as a map (empty if none is set).
func (r *reader) ModelConfig(model string) (map[string]any, error) {
	index, args := byModel(tables.ModelConfig, model)
	rows, err := list[tables.ModelConfigEntry](r, tables.ModelConfig, index, args...)
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
		e := &tables.ModelConfigEntry{ModelUUID: model, Key: k, Value: copyAny(v)}
		if old, err := t.configRow(model, k); err != nil {
			return nil, err
		} else if old != nil {
			e.CreateIndex = old.CreateIndex
		}
		if err := t.put(tables.ModelConfig, e); err != nil {
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
			if err := t.del(tables.ModelConfig, old); err != nil {
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
func (t *Txn) configRow(model, key string) (*tables.ModelConfigEntry, error) {
	if e, ok := t.config.row(model, key); ok {
		return e, nil
	}
	return first[tables.ModelConfigEntry](&t.before, tables.ModelConfig, "id", model, key)
}

// configWrites records the config rows a transaction has written, so that
// configRow sees them: every write to the config table goes through
// setModelConfigKeys or removeModel, which record it here.
type configWrites struct {
	rows    map[configKey]*tables.ModelConfigEntry // nil: deleted
	removed map[string]bool                        // models whose stored rows are all gone
}

type configKey struct{ model, key string }

func (w *configWrites) wrote(model, key string, e *tables.ModelConfigEntry) {
	if w.rows == nil {
		w.rows = map[configKey]*tables.ModelConfigEntry{}
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
func (w *configWrites) row(model, key string) (*tables.ModelConfigEntry, bool) {
	if e, ok := w.rows[configKey{model, key}]; ok {
		return e, true
	}
	return nil, w.removed[model]
}
