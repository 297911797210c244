package modelcmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
)

// frameSource yields a model's change frames: the websocket watch, or, when
// the controller refuses the websocket, full-status frames from polling.
type frameSource interface {
	Next(ctx context.Context) (*api.WatchFrame, error)
	Close() error
}

// pollInterval is how often the polling fallback asks for status.
const pollInterval = time.Second

// Follow opens the model's watch. If the controller refuses the websocket
// for a reason other than the model or the caller (a proxy, an old
// controller), it warns once and polls status instead, so --watch,
// debug-log and waits keep working.
func (a *Env) Follow(ctx context.Context, mc *ModelConn) (frameSource, error) {
	w, err := mc.Client.Model(mc.UUID).Watch(ctx, 0)
	if err == nil {
		return w, nil
	}
	switch api.CodeOf(err) {
	case api.CodeNotFound, api.CodeUnauthorized, api.CodeForbidden, api.CodeUnavailable:
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, err
	}
	fmt.Fprintf(a.Stderr, "WARNING the controller refused the event stream (%v); polling every %s instead\n", err, pollInterval)
	return &pollSource{mc: mc}, nil
}

// SayOutage returns the function a followed stream of mc's model calls
// when it stops for want of an available controller, and when it resumes:
// what says so on stderr, so that a watch or log that goes quiet says why
// (the model named as the user names it, not by its UUID).
func (a *Env) SayOutage(what string, mc *ModelConn) func(err error) {
	return func(err error) {
		if err != nil {
			fmt.Fprintf(a.Stderr, "%s interrupted, retrying: %s\n", what, strings.ReplaceAll(err.Error(), mc.UUID, mc.Model))
			return
		}
		fmt.Fprintf(a.Stderr, "%s resumed.\n", what)
	}
}

type pollSource struct {
	mc    *ModelConn
	last  uint64
	timer *time.Timer
}

// Next returns the status as a reset frame whenever its index moved.
func (p *pollSource) Next(ctx context.Context) (*api.WatchFrame, error) {
	for {
		if p.timer != nil {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-p.timer.C:
			}
		}
		p.timer = time.NewTimer(pollInterval)
		fs, err := p.mc.Client.Model(p.mc.UUID).Status(ctx)
		if err != nil {
			return nil, err
		}
		if fs.Index != p.last || p.last == 0 {
			p.last = fs.Index
			return &api.WatchFrame{Type: api.FrameReset, Index: fs.Index, Status: fs}, nil
		}
	}
}

func (p *pollSource) Close() error {
	if p.timer != nil {
		p.timer.Stop()
	}
	return nil
}

// ModelRemoved reports whether a watch frame carries the removal of the
// watched model itself.
func ModelRemoved(f *api.WatchFrame, uuid string) bool {
	for _, d := range f.Deltas {
		if d.Kind == "model" && d.Key == uuid && d.Op == "delete" {
			return true
		}
	}
	return false
}
