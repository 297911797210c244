package tables

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
