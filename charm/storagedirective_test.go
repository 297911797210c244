package charm

import (
	"strings"
	"testing"
)

func TestParseStorageDirective(t *testing.T) {
	for in, want := range map[string]StorageDirective{
		"rootfs,10G,2": {Pool: "rootfs", Size: 10 << 10, Count: 2},
		"3,loop":       {Pool: "loop", Count: 3},
		"512M":         {Size: 512},
		"tmpfs":        {Pool: "tmpfs"},
	} {
		got, err := ParseStorageDirective(in)
		if err != nil || got != want {
			t.Errorf("ParseStorageDirective(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":          "empty",
		"0":         "count",
		"1,2":       "count",
		"1G,2G":     "size",
		"a,b":       "two pools",
		"10Q":       "not a pool",
		"rootfs,-1": "not a pool",
	} {
		if _, err := ParseStorageDirective(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseStorageDirective(%q): error %v, want one saying %q", in, err, want)
		}
	}
}

func TestCheckStorage(t *testing.T) {
	m, err := ParseMeta([]byte("name: db\nstorage:\n  data: {type: filesystem, minimum-size: 1G, multiple: {range: 1-3}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CheckStorage("data", StorageDirective{Pool: "rootfs", Size: 2 << 10, Count: 2}); err != nil {
		t.Errorf("a directive within the charm's bounds: %v", err)
	}
	for _, tc := range []struct {
		name string
		d    StorageDirective
		want string
	}{
		{"logs", StorageDirective{}, `charm "db" has no storage "logs" (it declares data)`},
		{"data", StorageDirective{Count: 4}, "outside the charm's range 1-3"},
		{"data", StorageDirective{Size: 512}, "below the charm's minimum-size 1024M"},
	} {
		if err := m.CheckStorage(tc.name, tc.d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckStorage(%s, %+v): %v, want %q", tc.name, tc.d, err, tc.want)
		}
	}
}
