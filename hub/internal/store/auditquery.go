package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxAuditText bounds the free text of AuditQuery.Text (bytes): a longer
// one is refused rather than scanned for.
const MaxAuditText = 200

// AuditQuery filters the audit log. The scope fields restrict the answer to
// what the reader may see: unless All, an entry is visible when its org is
// in Orgs, its model in Models or its controller in Controllers.
type AuditQuery struct {
	All         bool
	Orgs        []string
	Models      []string
	Controllers []string
	// Self is the caller's identity: their own entries are readable
	// besides the scopes above ("" for none).
	Self string

	IdentityID string
	Actor      string
	// Org matches the entries recorded under that organization.
	Org       string
	ModelUUID string
	// ModelName matches entries of every model that had that name when
	// the entry was written, gone ones included.
	ModelName      string
	ControllerUUID string
	// ControllerName matches entries of every controller that had that
	// name when the entry was written, removed ones included.
	ControllerName string
	// Operation matches that operation, and the family it is the first
	// word of: "login" matches login-device and login-web, "model" the
	// hub's "model adopted" and "model forgotten".
	Operation string
	// Result matches one result (ResultOK, ResultDenied, ResultError,
	// ResultPending).
	Result string
	// Text matches entries whose actor, operation, path, model or
	// controller name or details contain it, case-insensitively (at most
	// MaxAuditText bytes).
	Text         string
	Since, Until time.Time
	// After is the pagination cursor: the next of a previous page; zero
	// starts at the newest.
	After AuditCursor
	Limit int
}

// AuditCursor is a position in the audit log, which is read newest first
// in (at, id) order. Both are needed: ids are taken in insertion order
// and times from the writer's clock, so the two orders differ when
// replicas' clocks do or an entry is written late, and a cursor of the id
// alone would skip or repeat such entries. at is held to the
// microsecond, as PostgreSQL keeps it.
type AuditCursor struct {
	At time.Time
	ID int64
}

// IsZero reports whether c is the start of the log.
func (c AuditCursor) IsZero() bool { return c.ID == 0 && c.At.IsZero() }

// String is c as it travels in a URL ("" for the zero cursor):
// "<at in Unix microseconds>_<id>".
func (c AuditCursor) String() string {
	if c.IsZero() {
		return ""
	}
	return strconv.FormatInt(c.At.UnixMicro(), 10) + "_" + strconv.FormatInt(c.ID, 10)
}

// ErrBadCursor is a cursor that no page answered.
var ErrBadCursor = errors.New("not a cursor from a previous page")

// ParseAuditCursor reads what AuditCursor.String wrote.
func ParseAuditCursor(s string) (AuditCursor, error) {
	at, id, ok := strings.Cut(s, "_")
	us, err1 := strconv.ParseInt(at, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if !ok || err1 != nil || err2 != nil || n <= 0 || len(s) > 48 {
		return AuditCursor{}, fmt.Errorf("audit cursor %q: %w", s, ErrBadCursor)
	}
	return AuditCursor{At: time.UnixMicro(us).UTC(), ID: n}, nil
}

// where is q's condition over audit_log, its arguments appended by arg.
func (q AuditQuery) where(arg func(any) string) (string, error) {
	if len(q.Text) > MaxAuditText {
		return "", fmt.Errorf("store: audit: %w: the text to find is longer than %d bytes", ErrInvalid, MaxAuditText)
	}
	var conds []string
	if !q.All {
		self := ""
		if q.Self != "" {
			self = " OR identity_id::text = " + arg(q.Self)
		}
		conds = append(conds, fmt.Sprintf("(org = ANY(%s) OR model_uuid = ANY(%s::text[]::uuid[]) OR controller_uuid = ANY(%s::text[]::uuid[])%s)",
			arg(q.Orgs), arg(q.Models), arg(q.Controllers), self))
	}
	for _, f := range []struct {
		col, v string
	}{{"identity_id::text", q.IdentityID}, {"actor", q.Actor}, {"org", q.Org}, {"model_uuid::text", q.ModelUUID},
		{"controller_uuid::text", q.ControllerUUID}, {"model_name", q.ModelName},
		{"controller_name", q.ControllerName}, {"result", q.Result}} {
		if f.v != "" {
			conds = append(conds, f.col+" = "+arg(f.v))
		}
	}
	if q.Operation != "" {
		conds = append(conds, fmt.Sprintf("(operation = %s OR operation LIKE %s OR operation LIKE %s)", arg(q.Operation),
			arg(likeEscape(q.Operation)+"-%"), arg(likeEscape(q.Operation)+" %")))
	}
	if q.Text != "" {
		// The text is a pattern of its own characters only: its % and _
		// are matched as themselves. Names are the recorded ones, which
		// name a model only to its own organization (Audit.Finish).
		p := arg("%" + likeEscape(cleanText(q.Text)) + "%")
		conds = append(conds, fmt.Sprintf("(actor ILIKE %[1]s OR operation ILIKE %[1]s OR path ILIKE %[1]s OR model_name ILIKE %[1]s"+
			" OR controller_name ILIKE %[1]s OR details::text ILIKE %[1]s)", p))
	}
	if !q.Since.IsZero() {
		conds = append(conds, "at >= "+arg(q.Since))
	}
	if !q.Until.IsZero() {
		conds = append(conds, "at < "+arg(q.Until))
	}
	if !q.After.IsZero() {
		conds = append(conds, fmt.Sprintf("(at, id) < (%s, %s)", arg(q.After.At), arg(q.After.ID)))
	}
	if len(conds) == 0 {
		return "TRUE", nil
	}
	return strings.Join(conds, " AND "), nil
}

// Query returns entries newest first, in (at, id) order, and the cursor
// of the next page (zero when there is none).
func (s *Audit) Query(ctx context.Context, q AuditQuery) ([]AuditEntry, AuditCursor, error) {
	if q.Limit <= 0 || q.Limit > 1000 {
		return nil, AuditCursor{}, fmt.Errorf("store: audit: %w: limit must be 1..1000", ErrInvalid)
	}
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	where, err := q.where(arg)
	if err != nil {
		return nil, AuditCursor{}, err
	}
	// A model is named in an entry of its own organization, or to those
	// who may read its audit; an entry of another organization (someone
	// there tried it, and was refused) gives its UUID alone, as the
	// refusal did.
	named := "m.org = audit_log.org"
	if q.All {
		named = "TRUE"
	} else if len(q.Models) > 0 {
		named = fmt.Sprintf("(m.org = audit_log.org OR m.uuid = ANY(%s::text[]::uuid[]))", arg(q.Models))
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at, coalesce(identity_id::text, ''), actor, org, operation, method, path,
		coalesce(model_uuid::text, ''), coalesce((SELECT name FROM models m WHERE m.uuid = audit_log.model_uuid AND `+named+`), model_name),
		coalesce(controller_uuid::text, ''), coalesce((SELECT name FROM controllers WHERE uuid = audit_log.controller_uuid), controller_name),
		status, result, details, remote_addr
		FROM audit_log WHERE `+where+` ORDER BY at DESC, id DESC LIMIT `+arg(q.Limit+1), args...)
	if err != nil {
		return nil, AuditCursor{}, pgErr("query audit", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := r.Scan(&e.ID, &e.At, &e.IdentityID, &e.Actor, &e.Org, &e.Operation, &e.Method, &e.Path,
			&e.ModelUUID, &e.Model, &e.ControllerUUID, &e.Controller, &e.Status, &e.Result, &e.Details, &e.RemoteAddr)
		return e, err
	})
	if err != nil {
		return nil, AuditCursor{}, pgErr("query audit", err)
	}
	var next AuditCursor
	if len(out) > q.Limit {
		out = out[:q.Limit]
		last := out[len(out)-1]
		next = AuditCursor{At: last.At, ID: last.ID}
	}
	return out, next, nil
}

// CountUpTo counts the entries q matches (its cursor and limit aside),
// stopping at most: an export's bound is checked without counting a
// whole log.
func (s *Audit) CountUpTo(ctx context.Context, q AuditQuery, most int) (int, error) {
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	q.After = AuditCursor{}
	where, err := q.where(arg)
	if err != nil {
		return 0, err
	}
	var n int
	err = s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM audit_log WHERE `+where+` LIMIT `+arg(most)+`) AS x`, args...).Scan(&n)
	return n, pgErr("count audit", err)
}

// ActivityCount is one count of Audit.Activity.
type ActivityCount struct {
	Start     time.Time
	Operation string
	Result    string
	Count     int64
}

// Buckets of Audit.Activity.

const (
	BucketHour = "hour"
	BucketDay  = "day"
)

// Activity counts the entries q matches (its cursor and limit aside) by
// bucket (BucketHour or BucketDay, in UTC), operation family (the
// operation's first word, as AuditQuery.Operation reads it) and result,
// oldest bucket first.
func (s *Audit) Activity(ctx context.Context, q AuditQuery, bucket string) ([]ActivityCount, error) {
	if bucket != BucketHour && bucket != BucketDay {
		return nil, fmt.Errorf("store: audit activity: %w: bucket must be hour or day", ErrInvalid)
	}
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	q.After = AuditCursor{}
	where, err := q.where(arg)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT date_trunc(`+arg(bucket)+`, at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start,
		substring(operation FROM '^[^ -]*') AS family, result, count(*)
		FROM audit_log WHERE `+where+` GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`, args...)
	if err != nil {
		return nil, pgErr("audit activity", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ActivityCount, error) {
		var c ActivityCount
		err := r.Scan(&c.Start, &c.Operation, &c.Result, &c.Count)
		c.Start = c.Start.UTC()
		return c, err
	})
	return out, pgErr("audit activity", err)
}
