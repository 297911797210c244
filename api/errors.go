package api

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code carried on the wire.
type Code string

// Error codes. They never change meaning; new ones are only added.
const (
	CodeBadRequest    Code = "bad-request"           // malformed body or parameters
	CodeInvalid       Code = "invalid"               // well-formed but fails validation
	CodeNotFound      Code = "not-found"             // the named entity does not exist
	CodeAlreadyExists Code = "already-exists"        // a name is taken
	CodeConflict      Code = "conflict"              // the entity's state forbids it (life, scope)
	CodeNotLeader     Code = "not-leader"            // application leadership required
	CodeUnauthorized  Code = "unauthorized"          // no or bad credentials
	CodeForbidden     Code = "forbidden"             // authenticated but not allowed
	CodeUnavailable   Code = "unavailable"           // no raft leader / shutting down; retry
	CodeTimeout       Code = "timeout"               // the deadline passed; outcome unknown
	CodeTooLarge      Code = "too-large"             // body or archive over the limit
	CodeTooMany       Code = "too-many"              // a limit on open calls reached; close some
	CodeInternal      Code = "internal"              // a bug or an unexpected failure
	CodeMigrating     Code = "migration-in-progress" // the model is migrating; retry later
	CodeRedirect      Code = "redirect"              // the model was migrated away; Details["target"] says where
)

// Error is the typed error every API call returns. Message is for people;
// Code is for programs.
type Error struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// Status is the HTTP status it travelled with (client side only).
	Status int `json:"-"`
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Is makes errors.Is(err, api.ErrNotFound) match any *Error with that code.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Message == "" && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	ErrBadRequest    = &Error{Code: CodeBadRequest}
	ErrInvalid       = &Error{Code: CodeInvalid}
	ErrNotFound      = &Error{Code: CodeNotFound}
	ErrAlreadyExists = &Error{Code: CodeAlreadyExists}
	ErrConflict      = &Error{Code: CodeConflict}
	ErrNotLeader     = &Error{Code: CodeNotLeader}
	ErrUnauthorized  = &Error{Code: CodeUnauthorized}
	ErrForbidden     = &Error{Code: CodeForbidden}
	ErrUnavailable   = &Error{Code: CodeUnavailable}
	ErrTimeout       = &Error{Code: CodeTimeout}
	ErrTooLarge      = &Error{Code: CodeTooLarge}
	ErrTooMany       = &Error{Code: CodeTooMany}
	ErrInternal      = &Error{Code: CodeInternal}
	ErrMigrating     = &Error{Code: CodeMigrating}
	ErrRedirect      = &Error{Code: CodeRedirect}
)

// Errorf builds an *Error with a code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of err, CodeInternal for an untyped error and ""
// for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}
