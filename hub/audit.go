package hub

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/gate"
	"github.com/droverhq/drover/hub/internal/proxy"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// auditedFields is the allow-list of request body fields copied into the
// audit log; every other field is recorded as "[redacted]", so secrets
// never reach it whatever a client sends.
var auditedFields = map[string]bool{
	"user": true, "group": true, "level": true, "model": true, "controller": true,
	"organization": true, "org": true, "name": true, "region": true, "cloud": true,
	// model requests (api/requests.go)
	"application": true, "charm-sha256": true, "num-units": true, "to": true, "constraints": true,
	"base": true, "scale": true, "exposed": true, "no-retry": true, "endpoints": true,
	"receivers": true, "action": true, "reset": true,
	"trust": true, "switch": true, "force-units": true, "num-machines": true,
	// hub requests
	"revoke-previous": true, "deprecated": true, "target-controller": true,
}

// keyedFields are request body objects whose keys are recorded (which
// settings changed, which parameters an action got) but not their values.
var keyedFields = map[string]bool{
	"set": true, "set-strings": true, "config": true, "config-strings": true, "params": true,
}

// auditInfo is filled in by handlers for the audit middleware.
type auditInfo struct {
	Operation string
	// Target is the entity the operation acts on, when the operation does
	// not say it (an application, a unit, a relation).
	Target         string
	Org            string
	ModelUUID      string
	ModelName      string // recorded with the entry, should the model be gone by then
	ControllerUUID string
	ControllerName string // recorded with the entry, should the controller be gone by then
	Details        map[string]any

	body    map[string]any // the request's JSON object, unredacted: for handlers only
	subject store.Identity // the user a grant or revoke names: for handlers only
}

type auditKey struct{}

// annotate lets a handler describe what the request touched.
func annotate(ctx context.Context, fn func(a *auditInfo)) {
	if a, ok := ctx.Value(auditKey{}).(*auditInfo); ok {
		fn(a)
	}
}

// audit records every mutating request under /v1. The entry is written
// before the request is served, and completed with its result after: a
// request the hub cannot record (its database is unavailable) is refused
// with 503 and nothing is done, so the log misses no change. An entry
// left "pending" is a request whose end the hub could not record.
func (s *Server) audit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if authn.SafeMethod(r.Method) {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		// The handler still reads the whole body (charm archives are larger
		// than what the audit log looks at).
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		info := &auditInfo{body: jsonObject(body), Operation: r.Method + " " + r.URL.Path}
		if rctx := chi.NewRouteContext(); s.api.Match(rctx, r.Method, "/"+strings.TrimPrefix(r.URL.EscapedPath(), "/v1/")) {
			info.Operation = hubOperation(r.Method, "/v1"+rctx.RoutePattern())
		}
		if tail, ok := strings.CutPrefix(r.URL.Path, "/v1/models/"); ok {
			// What a model request does is known from its path and body:
			// said already, should its end never be recorded.
			if id, rest, _ := strings.Cut(tail, "/"); uuid.Validate(id) == nil {
				info.ModelUUID = id
				info.Operation, info.Target = modelOperation(r.Method, "/"+rest, info.body)
			}
		}
		p, _ := authn.PrincipalFrom(r.Context())
		entry := func() store.AuditEntry {
			details := info.Details
			if details == nil {
				details = map[string]any{}
			}
			if info.Target != "" {
				details["target"] = info.Target
			}
			if b := redact(info.body); b != nil {
				details["body"] = b
			}
			return store.AuditEntry{IdentityID: p.Identity.ID, Actor: p.Identity.Name(), Org: cmp.Or(info.Org, p.Identity.Org),
				Operation: info.Operation, Method: r.Method, Path: r.URL.Path, ModelUUID: info.ModelUUID, Model: info.ModelName,
				ControllerUUID: info.ControllerUUID, Controller: info.ControllerName, Details: details}
		}
		begun := entry()
		begun.At, begun.RemoteAddr = s.cfg.Now(), s.authn.RemoteAddr(r)
		id, err := s.store.Audit.Begin(r.Context(), begun)
		if err != nil {
			s.writeError(w, r, fmt.Errorf("record %s %s in the audit log: %w", r.Method, r.URL.Path, err))
			return
		}
		// The operation is named already (hubOperations, modelOperation):
		// handlers add what they touched.
		rec := &proxy.Recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), auditKey{}, info)))
		if info.Operation == "" {
			info.Operation = hubOperation(r.Method, chi.RouteContext(r.Context()).RoutePattern())
		}
		status := max(rec.Status, 200)
		done := entry()
		done.Status, done.Result = status, resultOf(status)
		op := done.Operation
		// The request may have been cancelled; its end must still be written.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
		defer cancel()
		if err := s.store.Audit.Finish(ctx, id, done); err != nil {
			s.outages.unfinished.Inc()
			s.cfg.Logger.Error("audit write failed: the entry stays pending", "err", err, "id", id, "operation", op, "status", status)
		}
	})
}

func resultOf(status int) string {
	switch {
	case status < 400:
		return store.ResultOK
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound:
		return store.ResultDenied
	default:
		return store.ResultError
	}
}

// jsonObject is body decoded, when it is a JSON object.
func jsonObject(body []byte) map[string]any {
	var m map[string]any
	if len(body) == 0 || json.Unmarshal(body, &m) != nil {
		return nil
	}
	return m
}

// redact copies body keeping only what the allow-lists let through.
func redact(body map[string]any) map[string]any {
	if body == nil {
		return nil
	}
	out := make(map[string]any, len(body))
	for k, v := range body {
		switch obj, isObj := v.(map[string]any); {
		case auditedFields[k]:
			out[k] = v
		case keyedFields[k] && isObj:
			keys := make(map[string]any, len(obj))
			for name := range obj {
				keys[name] = "[redacted]"
			}
			out[k] = keys
		default:
			out[k] = "[redacted]"
		}
	}
	return out
}

func (s *Server) appendAudit(r *http.Request, e store.AuditEntry) {
	e.At, e.RemoteAddr = s.cfg.Now(), s.authn.RemoteAddr(r)
	// The request may have been cancelled; the record must still be written.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := s.store.Audit.Append(ctx, e); err != nil {
		s.cfg.Logger.Error("audit write failed", "err", err, "operation", e.Operation)
	}
}

// handleAudit answers GET /v1/audit: to everyone their own entries, and to
// holders of audit_viewer on the hub everything, or on organizations,
// controllers and models their entries, found with ListObjects.
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	q, nobody, err := s.auditQuery(r, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var entries []store.AuditEntry
	var next store.AuditCursor
	if !nobody {
		entries, next, err = s.store.Audit.Query(r.Context(), q)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if r.URL.Query().Get("format") == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		if !next.IsZero() {
			w.Header().Set("X-Next-Cursor", next.String())
		}
		out := newAuditCSV(w)
		if err := out.entries(entries); err != nil {
			s.cfg.Logger.Warn("audit csv answer failed", "err", err)
		}
		return
	}
	if entries == nil {
		entries = []store.AuditEntry{}
	}
	resp := map[string]any{"entries": entries}
	if !next.IsZero() {
		resp["next"] = next.String()
	}
	reply.JSON(w, http.StatusOK, resp)
}

// auditQuery reads the filters of r (GET /v1/audit and its export and
// activity) and scopes them to what p may read of the audit log. nobody
// is true when user= names nobody the caller may be told of: the answer
// is then empty, as for someone with no entries.
func (s *Server) auditQuery(r *http.Request, p authn.Principal) (q store.AuditQuery, nobody bool, err error) {
	q, err = parseAuditQuery(r.URL.Query())
	var unknown error // user= names nobody
	if err == nil && q.ControllerUUID != "" && uuid.Validate(q.ControllerUUID) != nil {
		q.ControllerUUID, q.ControllerName, err = s.auditController(r.Context(), p, q.ControllerUUID)
	}
	if err == nil && q.IdentityID != "" && uuid.Validate(q.IdentityID) != nil {
		// user= names a person by email or a service account by client id
		// as well as by identity id.
		// Nobody by that name matches no entry: answered, to a caller who
		// may not read the whole log, as for someone with no entries the
		// caller may read, so that the log tells nobody who has an account
		// on the hub.
		var id store.Identity
		id, err = s.identityByRef(r.Context(), q.IdentityID)
		if errors.Is(err, reply.ErrNotFound) {
			id.ID, unknown, err = "", err, nil
		}
		q.IdentityID = id.ID
	}
	if err != nil {
		return q, false, err
	}
	if err := s.auditScope(r.Context(), p, &q); err != nil {
		return q, false, err
	}
	if q.All && unknown != nil {
		return q, false, unknown
	}
	return q, unknown != nil, nil
}

// auditScope restricts q to what p may read of the audit log: all of it
// with audit_viewer on the hub; else the entries of the organizations,
// controllers and models p holds audit_viewer on, and p's own.
func (s *Server) auditScope(ctx context.Context, p authn.Principal, q *store.AuditQuery) error {
	all, err := s.authz.Check(ctx, p.Object, authz.AuditViewer, authz.HubObject())
	if err != nil {
		return err
	}
	q.All = all
	if all {
		return nil
	}
	for _, l := range []struct {
		typ string
		dst *[]string
	}{{authz.TypeOrganization, &q.Orgs}, {authz.TypeController, &q.Controllers}, {authz.TypeModel, &q.Models}} {
		objs, err := s.authz.ListObjects(ctx, p.Object, authz.AuditViewer, l.typ)
		if err != nil {
			return err
		}
		*l.dst = gate.IDs(objs)
	}
	// Everyone reads their own entries, such as a service account its
	// logins; audit_viewer adds everybody's in its scope.
	q.Self = p.Identity.ID
	return nil
}

// auditController reads controller= given as a name: a registered
// controller the caller may see, or whose audit they may read, is matched
// by its UUID (another's is not found, by the name given); a name no
// controller has now matches the entries recorded under it (a removed
// controller's), within what the caller may read anyway.
func (s *Server) auditController(ctx context.Context, p authn.Principal, name string) (id, recorded string, err error) {
	c, err := s.controllerFor(ctx, p, name, authz.Reader)
	if err == nil {
		return c.UUID, "", nil
	}
	c, lerr := s.store.Controllers.ByName(ctx, name)
	if errors.Is(lerr, store.ErrNotFound) {
		return "", name, nil
	}
	if lerr == nil && errors.Is(err, reply.ErrNotFound) {
		if ok, cerr := s.gate.Check(ctx, p, authz.AuditViewer, authz.ControllerObject(c.UUID)); cerr != nil || ok {
			return c.UUID, "", cerr
		}
	}
	return "", "", err
}

// auditResults are the results result= takes.
var auditResults = map[string]bool{store.ResultOK: true, store.ResultDenied: true, store.ResultError: true, store.ResultPending: true}

// parseAuditQuery reads the filters of GET /v1/audit from v.
func parseAuditQuery(v url.Values) (store.AuditQuery, error) {
	q := store.AuditQuery{IdentityID: v.Get("user"), ModelUUID: v.Get("model"), ControllerUUID: v.Get("controller"),
		Operation: v.Get("operation"), Actor: v.Get("actor"), Org: v.Get("org"), Result: v.Get("result"), Text: v.Get("q"), Limit: 100}
	if q.ModelUUID != "" && uuid.Validate(q.ModelUUID) != nil {
		// A name: every model that had it, destroyed ones included.
		q.ModelName, q.ModelUUID = q.ModelUUID, ""
	}
	var errs []error
	parseTime := func(name string, dst *time.Time) {
		if s := v.Get(name); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				errs = append(errs, errors.New(name+" must be RFC 3339"))
			}
			*dst = t
		}
	}
	parseTime("since", &q.Since)
	parseTime("until", &q.Until)
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			errs = append(errs, errors.New("limit must be 1..1000"))
		}
		q.Limit = n
	}
	if s := v.Get("after"); s != "" {
		c, err := store.ParseAuditCursor(s)
		if err != nil {
			errs = append(errs, errors.New("after must be a cursor from a previous page"))
		}
		q.After = c
	}
	if q.Result != "" && !auditResults[q.Result] {
		errs = append(errs, errors.New("result must be ok, denied, error or pending"))
	}
	if len(q.Text) > store.MaxAuditText {
		errs = append(errs, fmt.Errorf("q must be at most %d bytes", store.MaxAuditText))
	}
	if f := v.Get("format"); f != "" && f != "json" && f != "csv" {
		errs = append(errs, errors.New("format must be json or csv"))
	}
	if len(errs) > 0 {
		return q, errors.Join(append([]error{reply.ErrBadRequest}, errs...)...)
	}
	return q, nil
}
