package hub

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/proxy"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/internal/safetext"
)

// Exports of the audit log and of the access review are records taken out
// of the hub: each is audited, although a GET, and streamed page by page
// (exportPage entries at a time) so that no answer is held whole.
const exportPage = 1000

// auditFilters are the query parameters of GET /v1/audit that its export
// records in its audit entry.
var auditFilters = []string{"user", "actor", "org", "model", "controller", "operation", "result", "q", "since", "until", "format"}

// table writes rows as RFC 4180 CSV (encoding/csv quotes), every cell
// made safe to open in a spreadsheet and to print: a cell starting with
// = + - @ tab or CR is prefixed with ' (safetext.CSVCell), and control
// characters are written as escapes (safetext.Terminal). Text others
// wrote (a failed login's client id, a path, a group's name) reaches
// these cells.
type table struct{ cw *csv.Writer }

func newTable(w io.Writer, header ...string) (*table, error) {
	t := &table{cw: csv.NewWriter(w)}
	return t, t.row(header...)
}

func (t *table) row(cells ...string) error {
	safe := make([]string, len(cells))
	for i, c := range cells {
		safe[i] = safeCell(c)
	}
	return t.cw.Write(safe)
}

// safeCell is c with its control characters escaped, prefixed with '
// when it starts as a formula would, as written or as escaped (a tab or
// CR, escaped to \t or \r, is still guarded: the cell was given so).
func safeCell(c string) string {
	e := safetext.Terminal(c)
	if safetext.CSVCell(c) != c || safetext.CSVCell(e) != e {
		return "'" + e
	}
	return e
}

// flush writes out what is buffered.
func (t *table) flush() error {
	t.cw.Flush()
	return t.cw.Error()
}

// auditCSV writes audit entries as CSV, with a header.
type auditCSV struct{ t *table }

func newAuditCSV(w io.Writer) *auditCSV {
	t, _ := newTable(w, "id", "at", "actor", "identity_id", "org", "operation", "method", "path",
		"model_uuid", "controller_uuid", "status", "result", "details", "model", "controller")
	return &auditCSV{t: t}
}

func (a *auditCSV) entries(es []store.AuditEntry) error {
	for _, e := range es {
		d, err := json.Marshal(e.Details)
		if err != nil {
			return fmt.Errorf("audit entry %d details: %w", e.ID, err)
		}
		if err := a.t.row(strconv.FormatInt(e.ID, 10), e.At.UTC().Format(time.RFC3339Nano), e.Actor, e.IdentityID,
			e.Org, e.Operation, e.Method, e.Path, e.ModelUUID, e.ControllerUUID, strconv.Itoa(e.Status),
			e.Result, string(d), e.Model, e.Controller); err != nil {
			return err
		}
	}
	return a.t.flush()
}

// jsonArray streams values as one JSON array.
type jsonArray struct {
	w io.Writer
	n int
}

func (j *jsonArray) add(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	sep := ",\n"
	if j.n == 0 {
		sep = "[\n"
	}
	j.n++
	_, err = io.WriteString(j.w, sep+string(b))
	return err
}

// end closes the array; an array never ended is a cut answer.
func (j *jsonArray) end() error {
	s := "\n]\n"
	if j.n == 0 {
		s = "[]\n"
	}
	_, err := io.WriteString(j.w, s)
	return err
}

// auditedRead serves a read that takes records out of the hub (an
// export) under an audit entry of operation op, as the audit middleware
// does for changes: the entry, with the request's filters (the query
// parameters named in filters), is written before anything is answered,
// and completed with the result and what serve adds to its details. A
// request the hub cannot record is refused.
func (s *Server) auditedRead(w http.ResponseWriter, r *http.Request, op string, filters []string,
	serve func(w http.ResponseWriter, details map[string]any, at time.Time)) {
	p, _ := authn.PrincipalFrom(r.Context())
	details := map[string]any{}
	v := r.URL.Query()
	for _, k := range filters {
		if x := v.Get(k); x != "" {
			details[k] = truncate(x, store.MaxAuditText)
		}
	}
	e := store.AuditEntry{IdentityID: p.Identity.ID, Actor: p.Identity.Name(), Org: p.Identity.Org, Operation: op,
		Method: r.Method, Path: r.URL.Path, At: s.cfg.Now(), RemoteAddr: s.authn.RemoteAddr(r), Details: details}
	id, err := s.store.Audit.Begin(r.Context(), e)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("record %s %s in the audit log: %w", r.Method, r.URL.Path, err))
		return
	}
	rec := &proxy.Recorder{ResponseWriter: w}
	defer func() {
		e.Status = max(rec.Status, 200)
		e.Result = resultOf(e.Status)
		if r.Context().Err() != nil {
			details["cut"] = true
		}
		// The request may have been cancelled; its end must still be written.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
		defer cancel()
		if err := s.store.Audit.Finish(ctx, id, e); err != nil {
			s.outages.unfinished.Inc()
			s.cfg.Logger.Error("audit write failed: the entry stays pending", "err", err, "id", id, "operation", op)
		}
	}()
	serve(rec, details, e.At)
}

// truncate cuts s to at most n bytes, on a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// attachment names the file an export is saved as.
func attachment(w http.ResponseWriter, what, format string, now time.Time) {
	ctype := "application/json"
	if format == "csv" {
		ctype = "text/csv; charset=utf-8"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="drover-%s-%s.%s"`, what, now.UTC().Format("20060102T150405Z"), format))
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

// errTooManyRows is an export larger than the hub answers at once.
var errTooManyRows = errors.New("the export holds more rows than the hub answers at once: narrow it (since, until, or other filters)")

// handleAuditExport answers GET /v1/audit/export: the entries GET
// /v1/audit would answer, on every page, as one CSV file or one JSON
// array. It holds the entries older than itself (its own audit entry's
// time, its until unless that is earlier): entries written while it runs
// are not in it, and it is not in itself. An export the hub cannot finish (its database fails meanwhile)
// is cut off (http.ErrAbortHandler), so that no client takes a part
// for the whole.
func (s *Server) handleAuditExport(w http.ResponseWriter, r *http.Request) {
	s.auditedRead(w, r, "audit-export", auditFilters, func(w http.ResponseWriter, details map[string]any, at time.Time) {
		p, _ := authn.PrincipalFrom(r.Context())
		format := r.URL.Query().Get("format")
		if format == "" {
			format = "json"
		}
		v := r.URL.Query()
		if v.Get("limit") != "" || v.Get("after") != "" {
			s.writeError(w, r, fmt.Errorf("%w: an export has every page: no limit or after", reply.ErrBadRequest))
			return
		}
		q, nobody, err := s.auditQuery(r, p)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if q.Until.IsZero() || q.Until.After(at) {
			q.Until = at
		}
		n := 0
		if !nobody {
			n, err = s.store.Audit.CountUpTo(r.Context(), q, s.cfg.exportRows+1)
		}
		if err == nil && n > s.cfg.exportRows {
			err = fmt.Errorf("%w: %w (at most %d)", reply.ErrBadRequest, errTooManyRows, s.cfg.exportRows)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		attachment(w, "audit", format, s.cfg.Now())
		w.WriteHeader(http.StatusOK)
		rows, err := s.streamAudit(w, r, q, format, nobody)
		details["rows"] = rows
		if err != nil {
			details["error"] = err.Error()
			s.cfg.Logger.Warn("audit export cut off", "err", err, "rows", rows)
			panic(http.ErrAbortHandler)
		}
	})
}

// streamAudit writes the entries q matches, page after page, flushing
// each; it stops at the export's bound (entries written, out of time
// order, after the export was counted).
func (s *Server) streamAudit(w http.ResponseWriter, r *http.Request, q store.AuditQuery, format string, nobody bool) (int, error) {
	rc := http.NewResponseController(w)
	var put func([]store.AuditEntry) error
	var end func() error
	if format == "csv" {
		c := newAuditCSV(w)
		put, end = c.entries, c.t.flush
	} else {
		j := &jsonArray{w: w}
		put = func(es []store.AuditEntry) error {
			for _, e := range es {
				if err := j.add(e); err != nil {
					return err
				}
			}
			return nil
		}
		end = j.end
	}
	rows := 0
	q.Limit = exportPage
	for !nobody {
		page, next, err := s.store.Audit.Query(r.Context(), q)
		if err != nil {
			return rows, err
		}
		if rows+len(page) > s.cfg.exportRows {
			return rows, errTooManyRows
		}
		if err := put(page); err != nil {
			return rows, err
		}
		rows += len(page)
		if err := rc.Flush(); err != nil {
			return rows, err
		}
		if next.IsZero() {
			break
		}
		q.After = next
	}
	return rows, end()
}

// maxActivityBuckets bounds the buckets of one GET /v1/audit/activity.
const maxActivityBuckets = 400

// handleAuditActivity answers GET /v1/audit/activity: what the caller may
// read of the audit log (GET /v1/audit), counted by bucket (hour or day,
// in UTC), operation family and result.
func (s *Server) handleAuditActivity(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	q, bucket, err := parseActivity(r.URL.Query(), s.cfg.Now())
	if err == nil {
		err = s.auditScope(r.Context(), p, &q)
	}
	var counts []store.ActivityCount
	if err == nil {
		counts, err = s.store.Audit.Activity(r.Context(), q, bucket)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.Activity{Bucket: bucket, Since: q.Since, Until: q.Until, Series: []api.ActivityBucket{}}
	for _, c := range counts {
		out.Series = append(out.Series, api.ActivityBucket{Start: c.Start, Operation: c.Operation, Result: c.Result, Count: c.Count})
	}
	reply.JSON(w, http.StatusOK, out)
}

// parseActivity reads GET /v1/audit/activity's query: bucket (day by
// default), until (now by default), since (30 buckets before until by
// default) and org, the range at most maxActivityBuckets buckets long.
func parseActivity(v interface{ Get(string) string }, now time.Time) (store.AuditQuery, string, error) {
	bad := func(msg string) (store.AuditQuery, string, error) {
		return store.AuditQuery{}, "", fmt.Errorf("%w: %s", reply.ErrBadRequest, msg)
	}
	bucket := v.Get("bucket")
	var size time.Duration
	switch bucket {
	case "", store.BucketDay:
		bucket, size = store.BucketDay, 24*time.Hour
	case store.BucketHour:
		size = time.Hour
	default:
		return bad("bucket must be hour or day")
	}
	q := store.AuditQuery{Org: v.Get("org"), Until: now.UTC()}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if s := v.Get(t.name); s != "" {
			at, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return bad(t.name + " must be RFC 3339")
			}
			*t.dst = at.UTC()
		}
	}
	if v.Get("since") == "" {
		q.Since = q.Until.Add(-30 * size)
	}
	if !q.Since.Before(q.Until) {
		return bad("since must be before until")
	}
	if q.Until.Sub(q.Since.Truncate(size)) > maxActivityBuckets*size {
		return bad(fmt.Sprintf("the range spans more than %d buckets", maxActivityBuckets))
	}
	return q, bucket, nil
}
