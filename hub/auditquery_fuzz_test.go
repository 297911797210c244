package hub

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// FuzzParseAuditQuery: any query string is read into filters within
// their bounds, or refused as a bad request.
func FuzzParseAuditQuery(f *testing.F) {
	for _, s := range []string{"", "org=acme&result=ok&q=deploy", "q=%25_%5C", "after=1767225600000000_42&limit=1000",
		"after=42", "result=maybe", "limit=0", "since=2026-01-01T00:00:00Z&until=x", "model=prod&controller=east&user=a@b.c", "format=csv"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := parseAuditQuery(v)
		if err != nil {
			if !errors.Is(err, reply.ErrBadRequest) {
				t.Fatalf("%q: %v, not a bad request", raw, err)
			}
			return
		}
		if len(q.Text) > store.MaxAuditText || q.Limit < 1 || q.Limit > 1000 || (q.Result != "" && !auditResults[q.Result]) {
			t.Fatalf("%q: read as %+v", raw, q)
		}
		if v.Get("after") != "" && q.After.String() == "" {
			t.Fatalf("%q: a cursor read as none", raw)
		}
	})
}

// FuzzParseActivity: any query string is read into a range of at most
// maxActivityBuckets buckets, since before until, or refused.
func FuzzParseActivity(f *testing.F) {
	for _, s := range []string{"", "bucket=hour", "bucket=day&since=2026-01-01T00:00:00Z&until=2026-02-01T00:00:00Z",
		"bucket=hour&since=2000-01-01T00:00:00Z", "since=2030-01-01T00:00:00Z", "bucket=week", "org=acme&until=2026-01-01T00:00:00%2B14:00"} {
		f.Add(s)
	}
	now := time.Date(2026, 6, 1, 12, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, bucket, err := parseActivity(v, now)
		if err != nil {
			if !errors.Is(err, reply.ErrBadRequest) {
				t.Fatalf("%q: %v, not a bad request", raw, err)
			}
			return
		}
		size := 24 * time.Hour
		if bucket == store.BucketHour {
			size = time.Hour
		} else if bucket != store.BucketDay {
			t.Fatalf("%q: bucket %q", raw, bucket)
		}
		if !q.Since.Before(q.Until) || q.Until.Sub(q.Since) > maxActivityBuckets*size {
			t.Fatalf("%q: range %v..%v by %s", raw, q.Since, q.Until, bucket)
		}
	})
}
