package reply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/corkconn"
)

// JSON answers v with its length: encoding/json builds the whole
// value in memory anyway, and a known length lets clients and the hub's
// proxy read the answer without chunked framing or a flush per chunk.
func JSON(w http.ResponseWriter, status int, v any) {
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

// Indexed writes v with the raft index it reflects.
func Indexed(w http.ResponseWriter, status int, index uint64, v any) {
	w.Header().Set(api.HeaderIndex, strconv.FormatUint(index, 10))
	JSON(w, status, v)
}

// Decode reads a JSON body strictly: unknown fields and trailing data are
// errors, so typos in requests are reported rather than ignored.
func Decode(w http.ResponseWriter, r *http.Request, max int64, v any) error {
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

// Corked is a ResponseWriter wrapper (a metrics recorder, say) that
// knows the request's corkable connection.
type Corked interface {
	CorkConn() *corkconn.Conn
}

// corkOf returns the corkable connection under w, or nil.
func corkOf(w http.ResponseWriter) *corkconn.Conn {
	for {
		switch x := w.(type) {
		case Corked:
			return x.CorkConn()
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}
