package jsonw

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
)

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTimeMatchesMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("plus", 5*3600+1800), time.FixedZone("zero", 0)}
	times := []time.Time{{}, time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2026, 11, 22, 0, 6, 49, 120000000, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for range 2000 {
		times = append(times, time.Unix(rng.Int64N(1<<36)-1<<35, rng.Int64N(1e9)))
	}
	for _, tm := range times {
		for _, z := range zones {
			tz := tm.In(z)
			want, err := json.Marshal(tz)
			if err != nil {
				if got := string(Time(nil, tz)); got != "null" {
					t.Errorf("Time(%v) = %s, want null for a year json refuses", tz, got)
				}
				continue
			}
			if got := string(Time(nil, tz)); got != string(want) {
				t.Errorf("Time(%v) = %s, want %s", tz, got, want)
			}
		}
	}
}

func TestStringAndNumbersMatchMarshal(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "<a&b>", "\x00\x1f\x7f", "ünï✓", "\u2028\u2029", "\xff\xfe"} {
		if got, want := string(String(nil, s)), marshal(t, s); got != want {
			t.Errorf("String(%q) = %s, want %s", s, got, want)
		}
	}
	if got := string(Int(Field([]byte("{"), "a", true), -42)) + string(Uint(Field(nil, "b", false), 1<<64-1)); got != `{"a":-42,"b":18446744073709551615` {
		t.Errorf("Field/Int/Uint = %s", got)
	}
}

func TestUUIDMatchesString(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		var u uuid.UUID
		for i := range u {
			u[i] = byte(rng.UintN(256))
		}
		if got, want := string(UUID(nil, u)), `"`+u.String()+`"`; got != want {
			t.Errorf("UUID = %s, want %s", got, want)
		}
	}
}

// FuzzString holds String to json.Marshal on arbitrary bytes; the seeds
// run as a regular test.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a", `"`, "\\", "\x00", "é", "\u2028", "\xc3", "<script>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(String(nil, s)), marshal(t, s); got != want {
			t.Errorf("String(%q) = %s, want %s", s, got, want)
		}
		if got, want := string(String(nil, []byte(s))), marshal(t, s); got != want {
			t.Errorf("String([]byte %q) = %s, want %s", s, got, want)
		}
	})
}
