// Package reply writes the controller's HTTP answers: JSON with its
// length (so it leaves in one write), errors mapped to wire codes in the
// one table of this transport, and the strict request decoding and query
// parameters every handler shares. The API server and the agent gateway
// answer through it, so a code means the same status everywhere.
package reply

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/spoke/internal/blobs"
	"github.com/droverhq/drover/spoke/internal/peer"
)

// migratingRetryAfter is the Retry-After, in seconds, of a change refused
// because its model is migrating.
const migratingRetryAfter = "5"

// httpStatus is the one table from error codes to HTTP statuses.
var httpStatus = map[api.Code]int{
	api.CodeBadRequest:     http.StatusBadRequest,
	api.CodeInvalid:        http.StatusUnprocessableEntity,
	api.CodeNotFound:       http.StatusNotFound,
	api.CodeAlreadyExists:  http.StatusConflict,
	api.CodeConflict:       http.StatusConflict,
	api.CodeNotLeader:      http.StatusConflict,
	api.CodeUnauthorized:   http.StatusUnauthorized,
	api.CodeForbidden:      http.StatusForbidden,
	api.CodeUnavailable:    http.StatusServiceUnavailable,
	api.CodeTimeout:        http.StatusGatewayTimeout,
	api.CodeTooLarge:       http.StatusRequestEntityTooLarge,
	api.CodeTooMany:        http.StatusTooManyRequests,
	api.CodeInternal:       http.StatusInternalServerError,
	api.CodeMigrating:      http.StatusConflict,
	api.CodeRedirect:       http.StatusConflict,
	peer.CodeNotRaftLeader: http.StatusMisdirectedRequest,
}

// APIError maps any error to an *api.Error. Typed errors from lower
// layers keep their code; known sentinels get theirs; anything else is
// internal, and its detail is logged rather than sent.
func APIError(err error) *api.Error {
	var e *api.Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, charm.ErrInvalid):
		return &api.Error{Code: api.CodeInvalid, Message: err.Error()}
	case errors.Is(err, blobs.ErrTooLarge):
		return &api.Error{Code: api.CodeTooLarge, Message: err.Error()}
	case errors.Is(err, blobs.ErrNotFound):
		return &api.Error{Code: api.CodeNotFound, Message: err.Error()}
	case errors.Is(err, blobs.ErrBadHash), errors.Is(err, blobs.ErrHashMismatch):
		return &api.Error{Code: api.CodeBadRequest, Message: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return &api.Error{Code: api.CodeTimeout, Message: "the request timed out"}
	case errors.Is(err, context.Canceled):
		return &api.Error{Code: api.CodeUnavailable, Message: "the request was cancelled"}
	}
	return &api.Error{Code: api.CodeInternal, Message: "internal error"}
}

// WriteError answers err with its code's HTTP status; an internal error's
// detail is logged, not sent.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	e := APIError(err)
	status := e.Status
	if status == 0 {
		status = httpStatus[e.Code]
	}
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if e.Code == api.CodeInternal {
		slog.Default().Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if e.Code == api.CodeMigrating && w.Header().Get("Retry-After") == "" {
		// A migration quiesces a model for seconds to minutes.
		w.Header().Set("Retry-After", migratingRetryAfter)
	}
	JSON(w, status, e)
}
