package hub

import (
	"errors"
	"net/http"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/proxy"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/hub/internal/token"
)

// errorTable maps errors to HTTP status and wire code: the one table for
// this transport, after unavailability (a dependency out of reach). The
// first match wins.
var errorTable = []struct {
	err    error
	status int
	code   api.Code
	public string // message shown instead of err's text; "" shows err
}{
	{reply.ErrUnauthenticated, http.StatusUnauthorized, api.CodeUnauthorized, "authentication required"},
	{token.ErrInvalid, http.StatusUnauthorized, api.CodeUnauthorized, "authentication required"},
	{reply.ErrForbidden, http.StatusForbidden, api.CodeForbidden, ""},
	{store.ErrDisabled, http.StatusForbidden, api.CodeForbidden, ""},
	{reply.ErrNotFound, http.StatusNotFound, api.CodeNotFound, ""},
	{store.ErrNotFound, http.StatusNotFound, api.CodeNotFound, ""},
	{reply.ErrBadRequest, http.StatusBadRequest, api.CodeBadRequest, ""},
	{store.ErrInvalid, http.StatusBadRequest, api.CodeInvalid, ""},
	{store.ErrAlreadyExists, http.StatusConflict, api.CodeAlreadyExists, ""},
	{reply.ErrConflict, http.StatusConflict, api.CodeConflict, ""},
	{proxy.ErrUnavailable, http.StatusBadGateway, api.CodeUnavailable, ""},
	{errControllerUnreachable, http.StatusBadGateway, api.CodeUnavailable, ""},
	{errControllerTLS, http.StatusBadRequest, api.CodeBadRequest, ""},
	{errNotAController, http.StatusBadRequest, api.CodeBadRequest, ""},
}

// unavailability says which of the hub's dependencies err is the want of
// (the "dependency" label of drover_hub_dependency_unavailable_total),
// and what to answer; ok is false when err is about something else.
// Checked before errorTable: whatever else the failure says (a session
// not found, say), the caller's request is not at fault, and may be sent
// again.
func unavailability(err error) (dep, msg string, ok bool) {
	switch {
	case store.Unavailable(err):
		return depPostgres, "the hub's database is unavailable (try again shortly; if this lasts, the hub's operator checks its PostgreSQL server)", true
	case errors.Is(err, authn.ErrIdPUnavailable):
		return depOIDC, "the hub cannot reach its identity provider (try again shortly; if this lasts, the hub's operator checks the OIDC issuer)", true
	case errors.Is(err, authz.ErrUnavailable):
		return depOpenFGA, "the hub cannot reach its permission service (try again shortly; if this lasts, the hub's operator checks OpenFGA)", true
	}
	return "", "", false
}

// relayedCodes are the controller's answers about the caller's request
// that the hub passes on, with their status.
var relayedCodes = map[api.Code]int{
	api.CodeBadRequest:    http.StatusBadRequest,
	api.CodeInvalid:       http.StatusUnprocessableEntity,
	api.CodeAlreadyExists: http.StatusConflict,
	api.CodeConflict:      http.StatusConflict,
	api.CodeMigrating:     http.StatusConflict,
	api.CodeRedirect:      http.StatusConflict,
	api.CodeTooLarge:      http.StatusRequestEntityTooLarge,
	api.CodeTooMany:       http.StatusTooManyRequests, // the hub's own too (live.go)
}

// writeError answers err with the status and code from errorTable;
// anything unknown is a 500 whose detail stays in the log.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var oe *reply.OAuthError
	if errors.As(err, &oe) {
		reply.JSON(w, oe.StatusOf(), oe)
		return
	}
	if dep, msg, ok := unavailability(err); ok {
		s.cfg.Logger.Error("request failed: a dependency is unavailable", "dependency", dep, "method", r.Method, "path", r.URL.Path, "err", err)
		s.outages.unavailable.WithLabelValues(dep).Inc()
		writeUnavailable(w, msg)
		return
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			msg := e.public
			if msg == "" {
				msg = publicMessage(err, e.err)
			}
			reply.JSON(w, e.status, &api.Error{Code: e.code, Message: msg})
			return
		}
	}
	// A controller's refusal of what the caller asked for (an invalid
	// name, a taken one) is the caller's to read, as the controller said
	// it; its other failures are the hub's trouble reaching it.
	var ae *api.Error
	if errors.As(err, &ae) {
		if status, ok := relayedCodes[ae.Code]; ok {
			reply.JSON(w, status, &api.Error{Code: ae.Code, Message: ae.Message, Details: ae.Details})
			return
		}
		s.cfg.Logger.Warn("controller failed a request", "method", r.Method, "path", r.URL.Path, "err", err)
		reply.JSON(w, http.StatusBadGateway, &api.Error{Code: api.CodeUnavailable, Message: "controller: " + ae.Error()})
		return
	}
	s.cfg.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	reply.JSON(w, http.StatusInternalServerError, &api.Error{Code: api.CodeInternal, Message: "internal error"})
}

// unavailableAnswer is the body of a 503: the API's error, and OAuth's
// (RFC 6749's temporarily_unavailable) for the clients of the login
// routes, which read that shape.
type unavailableAnswer struct {
	api.Error
	OAuthError       string `json:"error"`
	OAuthDescription string `json:"error_description"`
}

// writeUnavailable answers 503: what the hub could not reach, said in msg,
// and when to try again.
func writeUnavailable(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", "5")
	reply.JSON(w, http.StatusServiceUnavailable, &unavailableAnswer{Error: api.Error{Code: api.CodeUnavailable, Message: msg},
		OAuthError: "temporarily_unavailable", OAuthDescription: msg})
}

// publicMessage is err's text for the caller: the store's words without
// its package's name, and, for errors.Join(sentinel, detail), the detail
// alone (the sentinel is the answer's code already).
func publicMessage(err, sentinel error) string {
	msg := strings.ReplaceAll(err.Error(), "store: ", "")
	if rest, ok := strings.CutPrefix(msg, strings.ReplaceAll(sentinel.Error(), "store: ", "")+"\n"); ok && rest != "" {
		return rest
	}
	return msg
}
