package apiserver

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// TestDecodeLogRecordsRefusesBadInput: a transfer's body is whole
// records, one per line, each naming its entity and time, within the
// bound; anything else is refused with the line it is on.
func TestDecodeLogRecordsRefusesBadInput(t *testing.T) {
	good := `{"entity":"unit-kv-0","time":"2026-01-02T03:04:05Z","level":"INFO","module":"uniter","message":"ran install"}`
	for name, c := range map[string]struct {
		body string
		code api.Code
		says string
	}{
		"not JSON":           {good + "\nnot json\n", api.CodeBadRequest, "line 2"},
		"two records a line": {good + good, api.CodeBadRequest, "line 1"},
		"an unknown field":   {`{"entity":"e","time":"2026-01-02T03:04:05Z","colour":"red"}`, api.CodeBadRequest, "line 1"},
		"no entity":          {`{"time":"2026-01-02T03:04:05Z","message":"m"}`, api.CodeBadRequest, "needs an entity and a time"},
		"no time":            {`{"entity":"e","message":"m"}`, api.CodeBadRequest, "needs an entity and a time"},
		"an array":           {`[1,2]`, api.CodeBadRequest, "line 1"},
		"over the bound":     {good + "\n" + good + "\n", api.CodeTooLarge, "smaller batches"},
	} {
		max := int64(1 << 20)
		if name == "over the bound" {
			max = int64(len(good)) + 1
		}
		_, err := decodeLogRecords(strings.NewReader(c.body), max)
		if api.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %s saying %q", name, err, c.code, c.says)
		}
	}
	recs, err := decodeLogRecords(strings.NewReader("\n"+good+"\n\n"+good), 1<<20)
	if err != nil || len(recs) != 2 || recs[0].Message != "ran install" || !recs[0].Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("two records with blank lines: %+v, %v", recs, err)
	}
}

// FuzzDecodeLogRecords: a body never panics the decoder; what it accepts
// has an entity and a time per record and encodes back to records that
// decode to the same.
func FuzzDecodeLogRecords(f *testing.F) {
	f.Add([]byte(`{"entity":"unit-kv-0","time":"2026-01-02T03:04:05Z","message":"m"}` + "\n"))
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"entity":"e","time":"2026-01-02T03:04:05Z"}{"entity":"e"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		recs, err := decodeLogRecords(bytes.NewReader(body), 1<<16)
		if err != nil {
			if c := api.CodeOf(err); c != api.CodeBadRequest && c != api.CodeTooLarge {
				t.Fatalf("refused with %s: %v", c, err)
			}
			return
		}
		var buf bytes.Buffer
		for _, r := range recs {
			if r.Entity == "" || r.Time.IsZero() {
				t.Fatalf("accepted %+v", r)
			}
			if err := json.NewEncoder(&buf).Encode(r); err != nil {
				t.Fatal(err)
			}
		}
		again, err := decodeLogRecords(&buf, 1<<30)
		if err != nil || len(again) != len(recs) {
			t.Fatalf("re-decoding %d records: %d, %v", len(recs), len(again), err)
		}
	})
}

func TestLocalHostAndVersions(t *testing.T) {
	for id, want := range map[string]string{"local:box:3": "box", "local:a:b:10": "a:b", "i-123": "", "local:7": "", "local::1": ""} {
		if got, _ := localHost(id); got != want {
			t.Errorf("localHost(%q) = %q, want %q", id, got, want)
		}
	}
	for _, c := range []struct {
		a, b  string
		newer bool
	}{{"0.2.0", "0.1.9", true}, {"0.1.9", "0.1.0", false}, {"1.0", "0.9.0", true}, {"v0.1.0", "0.1.0", false}, {"0.1.0", "1.0.0", false}} {
		if got, err := newerMinor(c.a, c.b); err != nil || got != c.newer {
			t.Errorf("newerMinor(%q, %q) = %v, %v", c.a, c.b, got, err)
		}
	}
	if _, err := newerMinor("latest", "0.1.0"); api.CodeOf(err) != api.CodeInvalid {
		t.Errorf("an unparseable source version: %v", err)
	}
}
