package decodecheck

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Seed is one fuzz input: the request type's index in the table and a body.
type Seed struct {
	Kind uint8
	Body []byte
}

// Seeds are the bodies a corpus starts from: for each type a body with
// every field set and an empty object, and for the first type the
// malformed shapes (truncated, wrong types, huge numbers, deep nesting,
// duplicate keys, not an object at all).
func Seeds(kinds []func() any) []Seed {
	var out []Seed
	for i, k := range kinds {
		v := k()
		Fill(reflect.ValueOf(v).Elem(), 0)
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("%T: %v", v, err))
		}
		out = append(out, Seed{uint8(i), b}, Seed{uint8(i), []byte(`{}`)})
		if len(b) > 2 {
			out = append(out, Seed{uint8(i), b[:len(b)/2]}) // truncated
		}
		if i == 0 {
			out = append(out, malformed(b)...)
		}
	}
	return out
}

func malformed(valid []byte) []Seed {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(valid, &m)
	var wrong, huge, dup bytes.Buffer
	wrong.WriteByte('{')
	huge.WriteByte('{')
	dup.WriteByte('{')
	first := true
	for k, v := range m {
		if !first {
			wrong.WriteByte(',')
			huge.WriteByte(',')
			dup.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&wrong, "%q:[true]", k)
		fmt.Fprintf(&huge, "%q:1%s", k, strings.Repeat("0", 400))
		fmt.Fprintf(&dup, "%q:%s,%q:%s", k, v, k, v)
	}
	for _, b := range []*bytes.Buffer{&wrong, &huge, &dup} {
		b.WriteByte('}')
	}
	deep := strings.Repeat(`{"a":[`, 5000) + strings.Repeat(`]}`, 5000)
	var out []Seed
	for _, b := range [][]byte{
		wrong.Bytes(), huge.Bytes(), dup.Bytes(), []byte(deep),
		[]byte(`{"n":-1e999}`), []byte(`null`), []byte(`[]`), []byte(`"x"`), {},
		[]byte(`{}{}`), []byte(`{"a":"\ud800"}`), []byte("{\"a\":\"\xff\"}"),
	} {
		out = append(out, Seed{0, b})
	}
	return out
}

// Fill sets every field v reaches to a value that is not the zero one, so
// a dropped field shows in a round trip.
func Fill(v reflect.Value, depth int) {
	if depth > 4 || !v.CanSet() {
		return
	}
	switch v.Type() {
	case reflect.TypeOf(json.RawMessage(nil)):
		v.SetBytes([]byte(`{"k":1}`))
		return
	case reflect.TypeOf(json.Number("")):
		v.SetString("7")
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		if v.NumMethod() == 0 {
			v.Set(reflect.ValueOf("x"))
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		Fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		Fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return
		}
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		Fill(e, depth+1)
		m.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				Fill(v.Field(i), depth+1)
			}
		}
	}
}

// WriteCorpus writes seeds as files in dir in the go test fuzz format for
// a target taking (kind uint8, body []byte).
func WriteCorpus(t testing.TB, dir string, seeds []Seed) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range seeds {
		text := fmt.Sprintf("go test fuzz v1\nbyte(%q)\n[]byte(%q)\n", s.Kind, s.Body)
		name := fmt.Sprintf("seed-%02d-%x", s.Kind, sha256.Sum256([]byte(text)))[:24]
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ReadCorpus reads the (kind uint8, body []byte) inputs in dir.
func ReadCorpus(t testing.TB, dir string) []Seed {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []Seed
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 3 || lines[0] != "go test fuzz v1" {
			t.Fatalf("%s: not a (kind uint8, body []byte) corpus file", name)
		}
		kind, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "byte("), ")"))
		if err != nil || len(kind) != 1 {
			kind, err = unquoteByte(lines[1])
		}
		if err != nil {
			t.Fatalf("%s: kind %q: %v", name, lines[1], err)
		}
		body, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[2], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: body: %v", name, err)
		}
		out = append(out, Seed{kind[0], []byte(body)})
	}
	return out
}

// unquoteByte reads byte('\x80'), which strconv.Unquote turns into the
// two-byte UTF-8 of U+0080 rather than the byte.
func unquoteByte(line string) (string, error) {
	lit := strings.TrimSuffix(strings.TrimPrefix(line, "byte("), ")")
	r, _, tail, err := strconv.UnquoteChar(strings.Trim(lit, "'"), '\'')
	if err != nil || tail != "" || r > 0xff {
		return "", fmt.Errorf("not a byte literal")
	}
	return string([]byte{byte(r)}), nil
}

// SeedsCover fails t unless the corpus in dir holds, for every type in
// kinds, a body its decoder (dec(kind)) accepts. With update it first writes Seeds(kinds)
// there, which is how the committed corpus is made.
func SeedsCover(t testing.TB, dir string, kinds []func() any, dec func(kind int) Decoder, update bool) {
	t.Helper()
	if update {
		WriteCorpus(t, dir, Seeds(kinds))
	}
	accepted := map[int]bool{}
	for _, s := range ReadCorpus(t, dir) {
		if k := int(s.Kind); k < len(kinds) && dec(k)(s.Body, kinds[k]()) == nil {
			accepted[k] = true
		}
	}
	for i, k := range kinds {
		if !accepted[i] {
			t.Errorf("no seed in %s decodes as %T (kind %d): run this test with -update-seeds", dir, k(), i)
		}
	}
}

// Keys is the set of TypeKey names of kinds.
func Keys(kinds []func() any, ownPkg string) map[string]bool {
	keys := map[string]bool{}
	for _, k := range kinds {
		keys[TypeKey(k(), ownPkg)] = true
	}
	return keys
}
