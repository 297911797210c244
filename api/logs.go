package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// ErrLogsUnsupported is returned by Logs when the controller answers for
// the model but has no log stream (a controller older than debug-log).
var ErrLogsUnsupported = errors.New("the controller has no debug-log stream")

// LogsRequest selects a model's debug-log records.
type LogsRequest struct {
	// Since resumes after this record sequence number; 0 starts with the
	// oldest record the controller node still keeps.
	Since uint64
	// Follow keeps the stream open for new records; without it the stream
	// ends after the records kept now.
	Follow bool
}

// LogStream reads a model's debug-log records (GET
// /v1/models/{model}/logs). When the connection drops it reconnects, to any
// controller address, with since=<the last sequence number read>, so the
// caller sees one stream. Sequence numbers are per controller node: a
// resume that lands on another node may repeat or skip records, as the
// nodes keep different logs. Next is for one goroutine at a time.
type LogStream struct {
	c      *Client
	model  string
	follow bool
	ctx    context.Context // the stream's life: Logs' ctx
	seq    uint64          // of the last record read; owned by Next
	outage outage          // owned by Next

	// mu guards the open response.
	mu   sync.Mutex
	body io.ReadCloser
	dec  *json.Decoder
}

// Logs opens the model's log stream. ctx bounds the whole stream, not
// only the connect. An old controller without the stream gives
// ErrLogsUnsupported.
func (m ModelClient) Logs(ctx context.Context, req LogsRequest) (*LogStream, error) {
	s := &LogStream{c: m.c, model: m.uuid, follow: req.Follow, ctx: ctx, seq: req.Since}
	err := s.open(ctx)
	if errors.Is(err, ErrNotFound) {
		// Tell a missing model from a missing route without reading the
		// message: if the model answers, the route is what is missing.
		if _, merr := m.Info(ctx); merr == nil {
			return nil, fmt.Errorf("%w: %w", ErrLogsUnsupported, err)
		}
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// OnOutage has fn called, from Next, with the error when a followed
// stream cannot be resumed for want of an available controller (it goes
// on trying), and with nil once it has resumed. Set it before calling Next.
func (s *LogStream) OnOutage(fn func(err error)) { s.outage.notify = fn }

// Seq is the sequence number of the last record Next returned (or the
// Since the stream started from).
func (s *LogStream) Seq() uint64 { return s.seq }

func (s *LogStream) open(ctx context.Context) error {
	q := url.Values{"since": {strconv.FormatUint(s.seq, 10)}}
	if s.follow {
		q.Set("follow", "true")
	}
	resp, err := s.c.send(ctx, &request{method: http.MethodGet, path: modelPath(s.model, "logs"), query: q, stream: true})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = bodyCloser{Reader: resp.Body, r: resp}
	s.dec = json.NewDecoder(resp.Body)
	return nil
}

func (s *LogStream) decoder() *json.Decoder {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dec
}

// dropBody closes the open response, which ends a blocked read.
func (s *LogStream) dropBody() {
	s.mu.Lock()
	body := s.body
	s.body, s.dec = nil, nil
	s.mu.Unlock()
	if body != nil {
		_ = body.Close() // the read reports what broke; closing is best effort
	}
}

// Next returns the next record. Without Follow it returns io.EOF after
// the last one. It resumes after a dropped connection (with backoff while
// no controller answers) until ctx or the stream's context ends, or the
// controller refuses the stream.
func (s *LogStream) Next(ctx context.Context) (*LogRecord, error) {
	stop := context.AfterFunc(ctx, s.dropBody)
	defer stop()
	backoff := watchBackoffMin
	for {
		if err := s.live(ctx); err != nil {
			return nil, err
		}
		dec := s.decoder()
		if dec == nil {
			if err := s.open(s.ctx); err != nil {
				if CodeOf(err) != CodeUnavailable || s.ctx.Err() != nil {
					return nil, err
				}
				s.outage.failed(err)
				s.c.logger.Debug("api: log stream unavailable, retrying", "model", s.model, "error", err)
				if err := s.pause(ctx, backoff); err != nil {
					return nil, err
				}
				backoff = min(2*backoff, watchBackoffMax)
			} else {
				s.outage.ended()
			}
			continue
		}
		var rec LogRecord
		err := dec.Decode(&rec)
		if err == nil {
			s.seq = rec.Seq
			return &rec, nil
		}
		s.dropBody()
		if err := s.live(ctx); err != nil {
			return nil, err
		}
		if errors.Is(err, io.EOF) && !s.follow {
			return nil, io.EOF
		}
		s.c.logger.Debug("api: log stream lost, resuming", "model", s.model, "since", s.seq, "error", err)
	}
}

// live reports why the stream cannot go on, if it cannot.
func (s *LogStream) live(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.ctx.Err()
}

func (s *LogStream) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

// Close ends the stream.
func (s *LogStream) Close() error {
	s.dropBody()
	return nil
}
