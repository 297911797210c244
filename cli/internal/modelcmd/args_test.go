package modelcmd

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseKeyValues(t *testing.T) {
	got, err := ParseKeyValues([]string{"a=1", "b=x=y", "c="})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "1", "b": "x=y", "c": ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
	for _, bad := range [][]string{{"noequals"}, {"=v"}, {"a=1", "a=2"}} {
		_, err := ParseKeyValues(bad)
		var ue UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: err %v, want a usage error", bad, err)
		}
	}
}

func TestParseActionParams(t *testing.T) {
	got, err := ParseActionParams([]string{"n=3", "flag=true", "s=hello", "a.b=1", "a.c=x"}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": 3, "flag": true, "s": "hello", "a": map[string]any{"b": 1, "c": "x"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v", got)
	}
	got, _ = ParseActionParams([]string{"n=3"}, true)
	if got["n"] != "3" {
		t.Errorf("--string-args: %#v", got)
	}
	if _, err := ParseActionParams([]string{"a=1", "a.b=2"}, false); err == nil {
		t.Error("a value and a map under one name accepted")
	}
}

func TestSplitModelRef(t *testing.T) {
	for ref, want := range map[string][2]string{
		"demo": {"", "demo"}, "ctl:demo": {"ctl", "demo"}, "ctl:": {"ctl", ""}, "": {"", ""},
		"ctl:admin/demo": {"ctl", "admin/demo"},
	} {
		c, m := SplitModelRef(ref)
		if c != want[0] || m != want[1] {
			t.Errorf("%q: %q %q", ref, c, m)
		}
	}
}
