// Package reply is how the hub's handlers read a request's JSON body and
// write their answers: the JSON encoding and headers every answer carries,
// the errors of the hub's own making that the transport maps to wire codes
// (hub/errors.go), and OAuth 2.0's error shape for the login routes.
//
// Every package of the hub that answers a request (the handlers, authn,
// gate, proxy) wraps these sentinels, so one table maps them all.
package reply

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// Errors of the hub's own making, mapped to wire codes by the hub's
// errorTable.
var (
	ErrUnauthenticated = errors.New("authentication required")
	ErrForbidden       = errors.New("permission denied")
	ErrNotFound        = errors.New("not found")
	ErrBadRequest      = errors.New("bad request")
	ErrConflict        = errors.New("conflict")
)

// Nosniff is the X-Content-Type-Options value of every answer the hub
// makes or relays: browsers take its Content-Type as said.
var Nosniff = []string{"nosniff"}

// JSON answers v encoded as JSON with status.
func JSON(w http.ResponseWriter, status int, v any) {
	JSONHeader(w, status)
	_ = json.NewEncoder(w).Encode(v)
}

// JSONHeader sends the status and headers of a JSON answer.
func JSONHeader(w http.ResponseWriter, status int) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h["X-Content-Type-Options"] = Nosniff
	w.WriteHeader(status)
}

// Decode reads a JSON body of at most 64 KiB, rejecting unknown fields and
// anything after the one JSON value, which would otherwise be dropped.
func Decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("the request needs a JSON body")
		}
		return errors.Join(ErrBadRequest, err)
	}
	if dec.More() {
		return errors.Join(ErrBadRequest, errors.New("unexpected data after the JSON value in the request body"))
	}
	return nil
}

// OAuthError is an OAuth 2.0 error response, passed through to clients
// polling the device flow (authorization_pending, slow_down, ...).
type OAuthError struct {
	Status      int    `json:"-"`
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func (e *OAuthError) Error() string { return "oauth2: " + e.Code + " " + e.Description }

// StatusOf is the HTTP status an OAuth error is answered with: its own if
// it is a 4xx, else 400.
func (e *OAuthError) StatusOf() int {
	if e.Status >= 400 && e.Status < 500 {
		return e.Status
	}
	return http.StatusBadRequest
}
