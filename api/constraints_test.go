package api

import (
	"strings"
	"testing"
)

func TestParseConstraints(t *testing.T) {
	for in, want := range map[string]string{
		"":                                "",
		"mem=4G cores=2":                  "mem=4096M cores=2",
		"  mem=512   root-disk=1.5T ":     "mem=512M root-disk=1572864M",
		"mem=1024M arch=arm64 tags=a,b":   "mem=1024M arch=arm64 tags=a,b",
		"container=lxd zones=z1":          "container=lxd zones=z1",
		"allocate-public-ip=1 mem=":       "allocate-public-ip=true mem=",
		"instance-type=m5.large cores=08": "instance-type=m5.large cores=8",
	} {
		got, err := ParseConstraints(in)
		if err != nil || got != want {
			t.Errorf("ParseConstraints(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, phrase := range map[string]string{
		"mem":                      "want key=value",
		"=4G":                      "want key=value",
		"memory=4G":                `unknown constraint "memory"`,
		"mem=4G mem=8G":            "given twice",
		"mem=lots":                 "want a size",
		"mem=-1G":                  "want a size",
		"mem=1e3G":                 "want a size",
		"cores=two":                "whole number",
		"cores=-1":                 "whole number",
		"arch=x86":                 "want one of amd64",
		"container=docker":         "want one of lxd, kvm",
		"tags=a,,b":                "empty item",
		"allocate-public-ip=maybe": "true or false",
	} {
		_, err := ParseConstraints(in)
		if CodeOf(err) != CodeInvalid || !strings.Contains(err.Error(), phrase) {
			t.Errorf("ParseConstraints(%q): %v; want invalid, %q", in, err, phrase)
		}
	}
}

// FuzzParseConstraints: whatever it is given, it answers without
// panicking, and what it accepts it accepts again unchanged.
func FuzzParseConstraints(f *testing.F) {
	for _, s := range []string{"mem=4G cores=2", "root-disk=1.5T tags=a,b", "mem=", "x", "mem=1e309", "cores=99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		norm, err := ParseConstraints(s)
		if err != nil {
			return
		}
		again, err := ParseConstraints(norm)
		if err != nil || again != norm {
			t.Fatalf("%q normalized to %q, which gives %q, %v", s, norm, again, err)
		}
	})
}

// TestMergeConstraints: an application's constraints override its
// model's key by key, and an empty value removes the model's.
func TestMergeConstraints(t *testing.T) {
	for _, c := range []struct{ under, over, want string }{
		{"", "mem=4096M", "mem=4096M"},
		{"mem=2048M arch=amd64", "", "mem=2048M arch=amd64"},
		{"mem=2048M arch=amd64", "mem=8192M cores=2", "arch=amd64 mem=8192M cores=2"},
		{"mem=2048M arch=amd64", "mem=", "arch=amd64"},
	} {
		if got := MergeConstraints(c.under, c.over); got != c.want {
			t.Errorf("MergeConstraints(%q, %q) = %q, want %q", c.under, c.over, got, c.want)
		}
	}
}
