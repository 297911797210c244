package charm

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// StorageDirective is one `deploy --storage NAME=DIRECTIVE` value, as Juju
// spells it: a pool name, a size (<n>[MGTPEZY], MiB by default) and a
// count, comma-separated, in any order, each optional.
type StorageDirective struct {
	Pool  string
	Size  uint64 // MiB; 0 when not given
	Count int    // 0 when not given
}

var (
	poolRE  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*$`)
	countRE = regexp.MustCompile(`^[0-9]+$`)
	// A size in a directive needs its unit: a bare number is the count.
	directiveSizeRE = regexp.MustCompile(`^[0-9]+[MGTPEZY]$`)
)

// ParseStorageDirective parses "POOL,SIZE,COUNT" (any subset, any order).
func ParseStorageDirective(s string) (StorageDirective, error) {
	var d StorageDirective
	if strings.TrimSpace(s) == "" {
		return d, fmt.Errorf("storage directive is empty: want POOL,SIZE,COUNT (e.g. rootfs,10G,1)")
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case countRE.MatchString(f):
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || d.Count != 0 {
				return d, fmt.Errorf("storage directive %q: count %q must be one number of 1 or more", s, f)
			}
			d.Count = n
		case directiveSizeRE.MatchString(f):
			var p problems
			size := parseSize(&p, "size", f)
			if err := p.err(); err != nil || d.Size != 0 {
				return d, fmt.Errorf("storage directive %q: size %q: give one size, <n>[MGTPEZY]", s, f)
			}
			d.Size = size
		case poolRE.MatchString(f):
			if d.Pool != "" {
				return d, fmt.Errorf("storage directive %q: two pools, %q and %q", s, d.Pool, f)
			}
			d.Pool = f
		default:
			return d, fmt.Errorf("storage directive %q: %q is not a pool, a size (<n>[MGTPEZY]) or a count", s, f)
		}
	}
	return d, nil
}

// CheckStorage checks a --storage directive for storage name against the
// charm's metadata: the name must be declared, the count within its
// multiple.range, the size at least its minimum-size.
func (m *Meta) CheckStorage(name string, d StorageDirective) error {
	st, ok := m.Storage[name]
	if !ok {
		return fmt.Errorf("charm %q has no storage %q%s", m.Name, name, declared(m.Storage))
	}
	if d.Count != 0 && (d.Count < st.CountMin || (st.CountMax >= 0 && d.Count > st.CountMax)) {
		return fmt.Errorf("storage %q: count %d is outside the charm's range %s", name, d.Count, countRange(st))
	}
	if d.Size != 0 && d.Size < st.MinimumSize {
		return fmt.Errorf("storage %q: size %dM is below the charm's minimum-size %dM", name, d.Size, st.MinimumSize)
	}
	return nil
}

func countRange(st Storage) string {
	if st.CountMax < 0 {
		return fmt.Sprintf("%d+", st.CountMin)
	}
	return fmt.Sprintf("%d-%d", st.CountMin, st.CountMax)
}

func declared(storage map[string]Storage) string {
	if len(storage) == 0 {
		return " (it declares no storage)"
	}
	names := make([]string, 0, len(storage))
	for n := range storage {
		names = append(names, n)
	}
	sort.Strings(names)
	return " (it declares " + strings.Join(names, ", ") + ")"
}
