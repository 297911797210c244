package peer

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// AssignValue stores a command's value in out (a pointer): directly when
// it is out's type (applied on this node), by JSON otherwise (forwarded:
// ApplyResponse.Value).
func AssignValue(v, out any) error {
	if raw, ok := v.(json.RawMessage); ok {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("decode command result: %w", err)
		}
		return nil
	}
	dst := reflect.ValueOf(out).Elem()
	src := reflect.ValueOf(v)
	if src.Kind() == reflect.Pointer && src.Type().Elem() == dst.Type() {
		dst.Set(src.Elem())
		return nil
	}
	if src.Type() == dst.Type() {
		dst.Set(src)
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode command result: %w", err)
	}
	return AssignValue(json.RawMessage(raw), out)
}
