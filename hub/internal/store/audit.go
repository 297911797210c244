package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Audit is the audit log.
type Audit struct{ *db }

// Audit results.
const (
	ResultOK     = "ok"
	ResultDenied = "denied"
	ResultError  = "error"
	// ResultPending is an entry written before its request was served:
	// until the result replaces it, the request is in flight, or the hub
	// could not record how it ended (its database was lost meanwhile).
	ResultPending = "pending"
)

// AuditEntry is one record of the audit log.
type AuditEntry struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	IdentityID string    `json:"identity-id,omitempty"`
	Actor      string    `json:"actor,omitempty"`
	Org        string    `json:"org,omitempty"`
	Operation  string    `json:"operation"`
	Method     string    `json:"method,omitempty"`
	Path       string    `json:"path,omitempty"`
	ModelUUID  string    `json:"model-uuid,omitempty"`
	// Model is the model's name: when read, its name now, else the name
	// recorded with the entry (the model is gone); when written, a name to
	// record if the model is not indexed (yet, or any more).
	Model          string `json:"model,omitempty"`
	ControllerUUID string `json:"controller-uuid,omitempty"`
	// Controller is the controller's name, as Model is the model's: its
	// name now when read, else the recorded one (it was removed).
	Controller string         `json:"controller,omitempty"`
	Status     int            `json:"status,omitempty"`
	Result     string         `json:"result"`
	Details    map[string]any `json:"details,omitempty"`
	RemoteAddr string         `json:"remote-addr,omitempty"`
}

func nullUUID(s string) *uuid.UUID {
	u, err := uuid.Parse(s)
	if err != nil {
		return nil
	}
	return &u
}

// Append writes one entry.
func (s *Audit) Append(ctx context.Context, e AuditEntry) error {
	_, err := appendAudit(ctx, s.pool, e)
	return err
}

// Begin writes e for a request about to be served, as pending, and
// returns the entry's id for Audit.Finish. A request whose entry cannot be
// written is not served: no change goes unrecorded.
func (s *Audit) Begin(ctx context.Context, e AuditEntry) (int64, error) {
	e.Status, e.Result = 0, ResultPending
	return appendAudit(ctx, s.pool, e)
}

// Finish completes entry id, written by Audit.Begin, with what e says
// of the request and its result; its time, actor and address stay.
func (s *Audit) Finish(ctx context.Context, id int64, e AuditEntry) error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	storable(&e)
	tag, err := s.pool.Exec(ctx, `UPDATE audit_log SET org = $2, operation = $3, model_uuid = $4, controller_uuid = $5,
			status = $6, result = $7, details = $8,
			model_name = coalesce((SELECT name FROM models WHERE uuid = $4 AND org = $2), $9),
			controller_name = coalesce((SELECT name FROM controllers WHERE uuid = $5), $10)
		WHERE id = $1 AND result = 'pending'`,
		id, e.Org, e.Operation, nullUUID(e.ModelUUID), nullUUID(e.ControllerUUID), e.Status, e.Result, e.Details, e.Model, e.Controller)
	if err == nil && tag.RowsAffected() == 0 {
		return fmt.Errorf("finish audit %d: %w", id, ErrNotFound)
	}
	return pgErr("finish audit", err)
}

// storable makes e writable whatever a client sent: PostgreSQL's text and
// jsonb take neither NUL nor invalid UTF-8, so those are replaced (U+FFFD)
// in every string, details' keys and values included. The request such
// text came in is still recorded, and refused by its handler in its own
// words.
func storable(e *AuditEntry) {
	for _, f := range []*string{&e.Actor, &e.Org, &e.Operation, &e.Method, &e.Path, &e.Model, &e.Controller, &e.RemoteAddr} {
		*f = cleanText(*f)
	}
	if d, ok := cleanValue(e.Details).(map[string]any); ok {
		e.Details = d
	}
}

func cleanText(s string) string {
	if !strings.ContainsRune(s, 0) && utf8.ValidString(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func cleanValue(v any) any {
	switch v := v.(type) {
	case string:
		return cleanText(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[cleanText(k)] = cleanValue(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = cleanValue(x)
		}
		return out
	}
	return v
}

// appendAudit writes one entry and returns its id, in a transaction when
// the entry must exist exactly when the change it records does.
func appendAudit(ctx context.Context, db querier, e AuditEntry) (int64, error) {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	storable(&e)
	var id int64
	err := db.QueryRow(ctx, `INSERT INTO audit_log (at, identity_id, actor, org, operation, method, path,
		model_uuid, controller_uuid, status, result, details, remote_addr, model_name, controller_name)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
			coalesce((SELECT name FROM models WHERE uuid = $8 AND org = $4), $14),
			coalesce((SELECT name FROM controllers WHERE uuid = $9), $15))
		RETURNING id`,
		e.At, nullUUID(e.IdentityID), e.Actor, e.Org, e.Operation, e.Method, e.Path,
		nullUUID(e.ModelUUID), nullUUID(e.ControllerUUID), e.Status, e.Result, e.Details, e.RemoteAddr, e.Model, e.Controller).Scan(&id)
	return id, pgErr("append audit", err)
}

// DeleteBefore deletes entries older than cutoff (retention).
func (s *Audit) DeleteBefore(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM audit_log WHERE at < $1`, cutoff)
	return tag.RowsAffected(), pgErr("audit retention", err)
}

// likeEscape quotes LIKE's wildcards (and its escape) in s.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s)
}
