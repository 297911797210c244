package cli

import (
	"reflect"
	"testing"
)

func TestSplitWords(t *testing.T) {
	got, err := splitWords(`config kv title="hello world" 'a b' c\ d`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config", "kv", "title=hello world", "a b", "c d"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
	if _, err := splitWords(`"open`); err == nil {
		t.Error("unterminated quote accepted")
	}
}
