package modelcmd

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/droverhq/drover/api"
)

// SortedUnitNames orders units by application, then unit number.
func SortedUnitNames(units map[string]api.UnitStatus) []string {
	names := SortedKeys(units)
	sort.SliceStable(names, func(i, j int) bool { return UnitLess(names[i], names[j]) })
	return names
}

// UnitLess orders unit names by application, then unit number.
func UnitLess(a, b string) bool {
	ai, ni, _ := strings.Cut(a, "/")
	aj, nj, _ := strings.Cut(b, "/")
	if ai != aj {
		return ai < aj
	}
	return MachineLess(ni, nj)
}

// MachineLess compares ids numerically when both are numbers.
func MachineLess(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}

// IsMachineID is true for 0, 12 and 0/lxd/1.
func IsMachineID(s string) bool {
	for i, part := range strings.Split(s, "/") {
		if i%2 == 1 {
			if part == "" || strings.Trim(part, "abcdefghijklmnopqrstuvwxyz") != "" {
				return false
			}
			continue
		}
		if part == "" || strings.Trim(part, "0123456789") != "" {
			return false
		}
	}
	return true
}

// SortedKeys returns a map's keys in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
