package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestStatusStamps: the index and the controller timestamp are found in a
// status as a controller writes it, wherever they are and however spaced;
// a body without both, with one twice, or of another shape is refused.
func TestStatusStamps(t *testing.T) {
	real, err := json.Marshal(api.FullStatus{
		Model:        api.ModelStatus{Name: `a "quoted" {model}`},
		Applications: map[string]api.ApplicationStatus{"kv": {Charm: `x\"},"index":7`}},
		Controller:   api.ControllerStatus{Name: "east", Timestamp: "08:51:02Z"},
		Index:        1234,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		body         string
		index, stamp string
		ok           bool
	}{
		{"a controller's status", string(real), "1234", `"08:51:02Z"`, true},
		{"index first, spaced", ` { "index" : 5 , "controller" : { "timestamp" : "t" , "name" : "n" } }`, "5", `"t"`, true},
		{"nested lookalikes", `{"a":{"index":1,"controller":{"timestamp":"x"}},"b":["index",{"}":"]"}],"controller":{"timestamp":"y"},"index":2}`, "2", `"y"`, true},
		{"no index", `{"controller":{"timestamp":"t"}}`, "", "", false},
		{"no timestamp", `{"controller":{"name":"t"},"index":1}`, "", "", false},
		{"index twice", `{"index":1,"controller":{"timestamp":"t"},"index":2}`, "", "", false},
		{"timestamp twice", `{"index":1,"controller":{"timestamp":"t","timestamp":"u"}}`, "", "", false},
		{"negative index", `{"index":-1,"controller":{"timestamp":"t"}}`, "", "", false},
		{"timestamp a number", `{"index":1,"controller":{"timestamp":3}}`, "", "", false},
		{"controller a string", `{"index":1,"controller":"x"}`, "", "", false},
		{"an array", `[{"index":1}]`, "", "", false},
		{"cut short", string(real[:len(real)-3]), "", "", false},
		{"unbalanced", `{"a":[1,2},"index":1,"controller":{"timestamp":"t"}}`, "", "", false},
		{"empty", ``, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			index, stamp, ok := statusStamps([]byte(tc.body))
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if ok && (tc.body[index.start:index.end] != tc.index || tc.body[stamp.start:stamp.end] != tc.stamp) {
				t.Fatalf("found %q and %q, want %q and %q", tc.body[index.start:index.end], tc.body[stamp.start:stamp.end], tc.index, tc.stamp)
			}
		})
	}
}

// FuzzStatusStamps: any body is read without panicking; what is found is
// a number and a string inside the body, and replacing them in a valid
// JSON body leaves it valid.
func FuzzStatusStamps(f *testing.F) {
	for _, s := range []string{`{"controller":{"name":"n","timestamp":"08:00:00Z"},"index":12}`,
		`{"index":1,"controller":{"timestamp":"t"}}`, `{"a":"\"}","index":1,"controller":{"timestamp":"\\"}}`,
		`{"a":[{"b":[]}],"index":0,"controller":{"timestamp":""}}`, `{`, `{"index":}`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		index, stamp, ok := statusStamps(b)
		if !ok {
			return
		}
		if index.start < 0 || index.end > len(b) || stamp.start < 0 || stamp.end > len(b) ||
			!allDigits(string(b[index.start:index.end])) || stamp.end-stamp.start < 2 ||
			b[stamp.start] != '"' || b[stamp.end-1] != '"' {
			t.Fatalf("%q: index %v, stamp %v", b, index, stamp)
		}
		if !json.Valid(b) {
			return
		}
		first, second, x, y := index, stamp, "99", `"09:00:00Z"`
		if stamp.start < index.start {
			first, second, x, y = stamp, index, y, x
		}
		out := string(b[:first.start]) + x + string(b[first.end:second.start]) + y + string(b[second.end:])
		if !json.Valid([]byte(out)) {
			t.Fatalf("%q with its stamps replaced is not JSON: %q", b, out)
		}
	})
}

// TestStatusCopyRefusesBadTags: an ETag the hub could not send back as it
// came (too long, a control character) is not kept, nor is a body without
// its stamps; a good one is kept with what the hub relays of its headers.
func TestStatusCopyRefusesBadTags(t *testing.T) {
	body := []byte(`{"controller":{"name":"n","timestamp":"08:00:00Z"},"index":12}`)
	answer := func(tag string) *http.Response {
		return &http.Response{Header: http.Header{"Etag": {tag}, "Content-Type": {"application/json"},
			"Date": {"x"}, "Set-Cookie": {"a=b"}, api.HeaderIndex: {"12"}}}
	}
	key := statusKey{"c", "m"}
	for _, tag := range []string{"", `W/"` + strings.Repeat("a", maxStatusTag) + `"`, "W/\"a\x00b\"", "W/\"a\x7fb\""} {
		if cp := newStatusCopy(key, answer(tag), body); cp != nil {
			t.Errorf("tag %q kept", tag)
		}
	}
	if cp := newStatusCopy(key, answer(`W/"a.1.2.0"`), []byte(`{"index":12}`)); cp != nil {
		t.Error("a body without a timestamp kept")
	}
	cp := newStatusCopy(key, answer(`W/"a.1.2.0"`), body)
	if cp == nil || cp.tag != `W/"a.1.2.0"` {
		t.Fatalf("a good answer: %+v", cp)
	}
	if len(cp.header["Set-Cookie"]) != 0 || len(cp.header["Date"]) != 0 || cp.header.Get(api.HeaderIndex) != "12" ||
		cp.header.Get("Content-Type") != "application/json" {
		t.Fatalf("kept headers %v", cp.header)
	}
}
