package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"sync"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/internal/corkconn"
	"github.com/droverhq/drover/spoke/internal/blobs"
)

// CodeNotRaftLeader is the node-to-node answer of a node that is no longer
// the raft leader; the forwarding node retries elsewhere. Never sent to
// clients.
const CodeNotRaftLeader api.Code = "not-raft-leader"

// httpStatus is the one table from error codes to HTTP statuses.
var httpStatus = map[api.Code]int{
	api.CodeBadRequest:    http.StatusBadRequest,
	api.CodeInvalid:       http.StatusUnprocessableEntity,
	api.CodeNotFound:      http.StatusNotFound,
	api.CodeAlreadyExists: http.StatusConflict,
	api.CodeConflict:      http.StatusConflict,
	api.CodeNotLeader:     http.StatusConflict,
	api.CodeUnauthorized:  http.StatusUnauthorized,
	api.CodeForbidden:     http.StatusForbidden,
	api.CodeUnavailable:   http.StatusServiceUnavailable,
	api.CodeTimeout:       http.StatusGatewayTimeout,
	api.CodeTooLarge:      http.StatusRequestEntityTooLarge,
	api.CodeInternal:      http.StatusInternalServerError,
	CodeNotRaftLeader:     http.StatusMisdirectedRequest,
}

// toAPIError maps any error to an *api.Error. Typed errors from lower
// layers keep their code; known sentinels get theirs; anything else is
// internal, and its detail is logged rather than sent.
func toAPIError(err error) *api.Error {
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

func writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := toAPIError(err)
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
	writeJSON(w, status, e)
}

// writeJSON answers v with its length: encoding/json builds the whole
// value in memory anyway, and a known length lets clients and the hub's
// proxy read the answer without chunked framing or a flush per chunk.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= 1<<20 { // do not keep what one huge answer grew
			buf.Reset()
			jsonBuffers.Put(buf)
		}
	}()
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// A value encoding/json refuses (a NaN, an unsupported type) is a
		// bug here, not the client's: say so rather than send half of it.
		slog.Default().Error("cannot encode an answer", "err", err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, `{"code":%q,"message":"cannot encode the answer"}`+"\n", api.CodeInternal)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	defer corkconn.Hold(corkOf(w), w, int64(buf.Len()))() // the whole answer in one send
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes()) // the client may have gone; nothing to do
}

var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeIndexed writes v with the raft index it reflects.
func writeIndexed(w http.ResponseWriter, status int, index uint64, v any) {
	w.Header().Set(api.HeaderIndex, strconv.FormatUint(index, 10))
	writeJSON(w, status, v)
}

// decode reads a JSON body strictly: unknown fields and trailing data are
// errors, so typos in requests are reported rather than ignored.
func decode(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	body := http.MaxBytesReader(w, r.Body, max)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return api.Errorf(api.CodeTooLarge, "request body is over %d bytes", max)
		case errors.Is(err, io.EOF):
			return api.Errorf(api.CodeBadRequest, "request body is empty; expected a JSON object")
		}
		return api.Errorf(api.CodeBadRequest, "malformed JSON body: %v", err)
	}
	if dec.More() {
		return api.Errorf(api.CodeBadRequest, "malformed JSON body: unexpected data after the JSON object")
	}
	return nil
}

func badParam(name, value, want string) error {
	return api.Errorf(api.CodeBadRequest, "query parameter %s=%q: %s", name, value, want)
}

// assignValue stores a command's value in out (a pointer): directly when
// it is out's type (applied on this node), by JSON otherwise (forwarded).
func assignValue(v, out any) error {
	if raw, ok := v.(json.RawMessage); ok {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("decode command result: %w", err)
		}
		return nil
	}
	dst := reflect.ValueOf(out).Elem()
	src := reflect.ValueOf(v)
	if src.Kind() == reflect.Pointer && src.Type().Elem() == dst.Type() {
		dst.Set(src.Elem())
		return nil
	}
	if src.Type() == dst.Type() {
		dst.Set(src)
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode command result: %w", err)
	}
	return assignValue(json.RawMessage(raw), out)
}
