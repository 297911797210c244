package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StatementTimeout bounds each statement, and each wait for a connection,
// whose context has no deadline of its own: a request's, say. A database
// that hangs (a stalled disk, a stopped server, a partition on the way to
// it) would otherwise hold every request until its caller gives up, who
// is then told nothing of why; bounded, the request is answered "the
// hub's database is unavailable" (Unavailable). Work that may rightly take
// longer (migrations, retention) gives its context a deadline.
const StatementTimeout = 10 * time.Second

// boundedTracer gives the statements and connection waits of a pool
// StatementTimeout when their context has no deadline. pgx runs a
// statement, and reads its rows, under the context TraceQueryStart
// returns, and calls TraceQueryEnd when the rows are closed.
type boundedTracer struct {
	timeout time.Duration
}

type cancelKey struct{}

func (b boundedTracer) bound(ctx context.Context) context.Context {
	if _, ok := ctx.Deadline(); ok {
		return ctx
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	return context.WithValue(ctx, cancelKey{}, cancel)
}

func release(ctx context.Context) {
	if cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
		cancel()
	}
}

func (b boundedTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return b.bound(ctx)
}

func (boundedTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	release(ctx)
}

func (b boundedTracer) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	return b.bound(ctx)
}

func (boundedTracer) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	release(ctx)
}
