package api

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// constraintKinds are the machine constraints Juju knows, by the kind of
// value each takes.
var constraintKinds = map[string]string{
	"arch": "arch", "container": "container", "cores": "count", "cpu-power": "count",
	"mem": "size", "root-disk": "size", "root-disk-source": "text", "tags": "list",
	"instance-role": "text", "instance-type": "text", "spaces": "list", "virt-type": "text",
	"zones": "list", "allocate-public-ip": "bool", "image-id": "text",
}

var (
	constraintArches     = []string{"amd64", "arm64", "ppc64el", "riscv64", "s390x"}
	constraintContainers = []string{"lxd", "kvm"}
)

// ParseConstraints checks machine constraints as Juju writes them
// ("mem=4G cores=2 tags=a,b"): known keys, each once, with values of
// their kind (a size in M, G, T or P, MiB when bare; a count; a bool; a
// comma-separated list; an architecture; a container type). It returns
// them normalized: in the given order, single-spaced, sizes in M. Empty
// values reset a constraint and are kept ("mem=").
func ParseConstraints(s string) (string, error) {
	fields := strings.Fields(s)
	seen := map[string]bool{}
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return "", Errorf(CodeInvalid, "constraint %q: want key=value", f)
		}
		kind, known := constraintKinds[k]
		if !known {
			return "", Errorf(CodeInvalid, "unknown constraint %q (known: %s)", k, strings.Join(sortedConstraintKeys(), ", "))
		}
		if seen[k] {
			return "", Errorf(CodeInvalid, "constraint %q given twice", k)
		}
		seen[k] = true
		if v != "" {
			norm, err := constraintValue(kind, v)
			if err != nil {
				return "", Errorf(CodeInvalid, "constraint %s=%s: %v", k, v, err)
			}
			v = norm
		}
		out = append(out, k+"="+v)
	}
	return strings.Join(out, " "), nil
}

func constraintValue(kind, v string) (string, error) {
	switch kind {
	case "size":
		return constraintSize(v)
	case "count":
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return "", fmt.Errorf("want a whole number")
		}
		return strconv.FormatUint(n, 10), nil
	case "bool":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", fmt.Errorf("want true or false")
		}
		return strconv.FormatBool(b), nil
	case "arch":
		if !slices.Contains(constraintArches, v) {
			return "", fmt.Errorf("want one of %s", strings.Join(constraintArches, ", "))
		}
	case "container":
		if !slices.Contains(constraintContainers, v) {
			return "", fmt.Errorf("want one of %s", strings.Join(constraintContainers, ", "))
		}
	case "list":
		for _, item := range strings.Split(v, ",") {
			if item == "" {
				return "", fmt.Errorf("empty item in the list")
			}
		}
	}
	return v, nil
}

// constraintSize reads a size as Juju does: a number with an optional M,
// G, T or P suffix (MiB when bare), returned in M.
func constraintSize(v string) (string, error) {
	mult := 1.0
	num := v
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'M':
			num = v[:n-1]
		case 'G':
			mult, num = 1024, v[:n-1]
		case 'T':
			mult, num = 1024*1024, v[:n-1]
		case 'P':
			mult, num = 1024*1024*1024, v[:n-1]
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || f > 1e15 || strings.ContainsAny(num, "eEnNxX+-") {
		return "", fmt.Errorf("want a size such as 512M, 4G or 1.5T")
	}
	return strconv.FormatUint(uint64(f*mult+0.5), 10) + "M", nil
}

func sortedConstraintKeys() []string {
	keys := make([]string, 0, len(constraintKinds))
	for k := range constraintKinds {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// MergeConstraints lays over on under key by key, as Juju lays an
// application's constraints over its model's: a key of over replaces the
// same key of under, and an empty value ("mem=") removes it. Both are
// normalized (ParseConstraints); so is the result, under's keys first.
func MergeConstraints(under, over string) string {
	if under == "" {
		return over
	}
	overs := map[string]string{}
	var order []string
	for _, f := range strings.Fields(over) {
		k, v, _ := strings.Cut(f, "=")
		overs[k] = v
		order = append(order, k)
	}
	var out []string
	for _, f := range strings.Fields(under) {
		k, _, _ := strings.Cut(f, "=")
		if _, ok := overs[k]; !ok {
			out = append(out, f)
		}
	}
	for _, k := range order {
		if overs[k] != "" {
			out = append(out, k+"="+overs[k])
		}
	}
	return strings.Join(out, " ")
}
