// Package decodecheck holds what the request-body fuzz tests share: the
// property every decoder keeps (no panic; what it accepts re-encodes to
// an equal value; unknown fields refused when it is strict), and a walk
// over a package's source that lists every type its handlers decode, so a
// fuzz table that misses one fails a test rather than going stale.
// Only tests import it.
package decodecheck

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Decoder decodes body into v the way the handlers do.
type Decoder func(body []byte, v any) error

// Check asserts the decoder's promises for one body and one request type
// (newV returns a pointer to a fresh value of it). strict says whether the
// decoder refuses unknown object fields and data after the value (which
// it would otherwise drop).
func Check(t testing.TB, dec Decoder, strict bool, newV func() any, body []byte) {
	t.Helper()
	v1 := newV()
	if dec(body, v1) != nil {
		return // refused: nothing accepted, nothing lost
	}
	b1, err := json.Marshal(v1)
	if err != nil {
		t.Fatalf("%T accepted %q but cannot be encoded again: %v", v1, body, err)
	}
	v2 := newV()
	if err := dec(b1, v2); err != nil {
		t.Fatalf("%T accepted %q; its encoding %s is refused: %v", v1, body, b1, err)
	}
	if !Equal(reflect.ValueOf(v1), reflect.ValueOf(v2)) {
		t.Fatalf("%T accepted %q as %#v; encoded %s it decodes to %#v", v1, body, v1, b1, v2)
	}
	if strict && dec(append(append(b1[:len(b1):len(b1)], ' '), b1...), newV()) == nil {
		t.Fatalf("%T: strict decoder accepted %s followed by a second value, which it drops", v1, b1)
	}
	if reflect.TypeOf(v1).Elem().Kind() != reflect.Struct || len(b1) < 2 || b1[0] != '{' {
		return
	}
	extra := []byte(`{"decodecheck_unknown_field":0`)
	if b1[1] != '}' {
		extra = append(extra, ',')
	}
	extra = append(extra, b1[1:]...)
	err = dec(extra, newV())
	switch {
	case strict && err == nil:
		t.Fatalf("%T: strict decoder accepted an unknown field in %s", v1, extra)
	case !strict && err != nil:
		t.Fatalf("%T: lenient decoder refused an unknown field in %s: %v", v1, extra, err)
	}
}

// Equal is reflect.DeepEqual except that a nil and an empty slice or map
// are equal (omitempty drops an empty one) and raw JSON is compared
// compacted, nil as null: no such difference is data the sender meant.
func Equal(a, b reflect.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	if a.Type() == reflect.TypeOf(json.RawMessage(nil)) {
		return bytes.Equal(compact(a.Bytes()), compact(b.Bytes()))
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return Equal(a.Elem(), b.Elem())
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !Equal(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !Equal(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !Equal(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// compact is raw JSON without insignificant space; a nil one (which
// encodes as null) is null.
func compact(raw []byte) []byte {
	if len(raw) == 0 {
		return []byte("null")
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// TypeKey names the type v points to as a handler's source spells it:
// "api.DeployRequest", "GrantRequest" in its own package ownPkg (an
// import path), or an anonymous struct field by field.
func TypeKey(v any, ownPkg string) string {
	return typeKey(reflect.TypeOf(v).Elem(), ownPkg)
}

func typeKey(t reflect.Type, ownPkg string) string {
	if t.Name() == "" && t.Kind() == reflect.Struct {
		var fields []string
		for i := range t.NumField() {
			f := t.Field(i)
			fields = append(fields, f.Name+" "+typeKey(f.Type, ownPkg)+" "+strconv.Quote(string(f.Tag)))
		}
		return "struct{" + strings.Join(fields, "; ") + "}"
	}
	if t.Name() == "" || t.PkgPath() == "" {
		return t.String() // *bool, []string, map[string]any: as written
	}
	if t.PkgPath() == ownPkg {
		return t.Name()
	}
	return t.String()
}
