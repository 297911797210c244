package charm

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

var (
	rangeRE = regexp.MustCompile(`^([0-9]+)(?:(-)([0-9]+)?|(\+))?$`)
	sizeRE  = regexp.MustCompile(`^([0-9]+)([MGTPEZY])?$`)
)

// StorageType is the kind of storage a charm asks for.
type StorageType string

// Storage types.
const (
	StorageFilesystem StorageType = "filesystem"
	StorageBlock      StorageType = "block"
)

// Storage is one entry of metadata.yaml's storage map.
type Storage struct {
	Name        string
	Type        StorageType
	Description string
	Shared      bool
	ReadOnly    bool
	// CountMin and CountMax come from multiple.range; they default to 1.
	// CountMax is -1 when there is no upper bound ("m+" or "m-").
	CountMin int
	CountMax int
	// MinimumSize is in MiB; 0 means unspecified.
	MinimumSize uint64
	Location    string
	Properties  []string
}

func parseStorage(p *problems, v any) map[string]Storage {
	m, ok := getMap(p, "storage", v)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]Storage, len(m))
	for _, name := range sortedKeys(m) {
		field := join("storage", name)
		if !endpointRE.MatchString(name) {
			p.add(field, "invalid storage name")
		}
		sm, ok := getMap(p, field, m[name])
		if !ok {
			continue
		}
		checkKeys(p, field, sm, "type", "description", "shared", "read-only",
			"multiple", "minimum-size", "location", "properties")
		s := Storage{
			Name:        name,
			Type:        StorageType(getString(p, field+".type", sm["type"])),
			Description: getString(p, field+".description", sm["description"]),
			Shared:      getBool(p, field+".shared", sm["shared"]),
			ReadOnly:    getBool(p, field+".read-only", sm["read-only"]),
			Location:    getString(p, field+".location", sm["location"]),
			Properties:  getStringList(p, field+".properties", sm["properties"]),
			CountMin:    1,
			CountMax:    1,
		}
		switch s.Type {
		case StorageFilesystem:
		case StorageBlock:
			if s.Location != "" {
				p.add(field+".location", "not allowed for block storage")
			}
		case "":
			p.add(field+".type", "required (filesystem or block)")
		default:
			p.add(field+".type", "must be filesystem or block, not %q", s.Type)
		}
		for _, prop := range s.Properties {
			if prop != "transient" {
				p.add(field+".properties", "unknown property %q (only transient is allowed)", prop)
			}
		}
		if mult, ok := getMap(p, field+".multiple", sm["multiple"]); ok && mult != nil {
			checkKeys(p, field+".multiple", mult, "range")
			r := rangeString(p, field+".multiple.range", mult["range"])
			if r != "" {
				s.CountMin, s.CountMax = parseRange(p, field+".multiple.range", r)
			} else if mult["range"] == nil {
				p.add(field+".multiple.range", "required")
			}
		}
		if sm["minimum-size"] != nil {
			s.MinimumSize = parseSize(p, field+".minimum-size", sm["minimum-size"])
		}
		out[name] = s
	}
	return out
}

// rangeString accepts a YAML integer too, since `range: 2` is how people
// write the single-count form.
func rangeString(p *problems, field string, v any) string {
	if n, ok := toInt64(v); ok {
		return strconv.FormatInt(n, 10)
	}
	return getString(p, field, v)
}

func parseRange(p *problems, field, r string) (lo, hi int) {
	sub := rangeRE.FindStringSubmatch(r)
	if sub == nil {
		p.add(field, "must be m, m-n, m+ or m-, not %q", r)
		return 1, 1
	}
	atoi := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		if err != nil || n > math.MaxInt32 {
			p.add(field, "count %q out of range", s)
			return 0, false
		}
		return n, true
	}
	lo, ok := atoi(sub[1])
	if !ok {
		return 1, 1
	}
	switch {
	case sub[4] == "+", sub[2] == "-" && sub[3] == "":
		hi = -1
	case sub[3] != "":
		if hi, ok = atoi(sub[3]); !ok {
			return 1, 1
		}
		if hi < lo {
			p.add(field, "maximum %d is less than minimum %d", hi, lo)
		}
	default:
		hi = lo
	}
	if hi == 0 {
		p.add(field, "maximum count must be greater than zero")
	}
	return lo, hi
}

// parseSize returns a size in MiB. The unit defaults to M, as in Juju.
func parseSize(p *problems, field string, v any) uint64 {
	var s string
	if n, ok := toInt64(v); ok {
		s = strconv.FormatInt(n, 10)
	} else {
		s = getString(p, field, v)
		if s == "" {
			if _, isString := v.(string); isString {
				p.add(field, "must not be empty")
			}
			return 0
		}
	}
	sub := sizeRE.FindStringSubmatch(s)
	if sub == nil {
		p.add(field, "must be <n>[MGTPEZY], not %q", s)
		return 0
	}
	n, err := strconv.ParseUint(sub[1], 10, 64)
	if err != nil {
		p.add(field, "size %q out of range", s)
		return 0
	}
	// Each suffix step is a factor of 1024 over MiB; "" and "M" are MiB.
	mult := uint64(1) << (10 * max(strings.Index("MGTPEZY", sub[2]), 0))
	if n > math.MaxUint64/mult {
		p.add(field, "size %q out of range", s)
		return 0
	}
	return n * mult
}
