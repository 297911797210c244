package apiserver

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/stream"
	"github.com/droverhq/drover/spoke/internal/status"
)

// KeepaliveInterval is how often an idle watch sends a keepalive frame
// (Config.KeepaliveInterval overrides it).
const KeepaliveInterval = 30 * time.Second

// writeTimeout bounds one frame write: a consumer slower than this is cut
// off (it reconnects with since=N); the event broker never waits for it.
const writeTimeout = 10 * time.Second

// maxStreamClientMessage bounds one message a client sends on a watch or
// on the event stream. These streams flow from the server only: a client
// sends control frames (ping, pong, close: at most 125 bytes each by the
// protocol) and no data message at all, so anything larger is an abuse.
// The bound is checked against a frame's header, before its payload is
// read, and the connection is closed with 1009 (message too big).
const maxStreamClientMessage = 4 << 10

// upgradeStream upgrades a watch or event stream request to a websocket
// whose reads are bounded by maxStreamClientMessage.
func upgradeStream(w http.ResponseWriter, r *http.Request) (*websocket.Conn, error) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(maxStreamClientMessage)
	return conn, nil
}

var upgrader = websocket.Upgrader{
	ReadBufferSize:  1024,
	WriteBufferSize: 16 << 10,
	// Non-browser clients send no Origin; browsers must come from the same
	// host as the API (the dashboard is served by the same server).
	CheckOrigin: func(r *http.Request) bool {
		o := r.Header.Get("Origin")
		return o == "" || o == "https://"+r.Host
	},
}

// excluded event kinds: relation data may hold secrets and is not status;
// scopes and credentials are agent business.
var excludedKinds = map[string]bool{state.KindRelationData: true, state.KindRelationScope: true,
	state.KindLeaderSettings: true}

// getStatus answers a model's status, or 304 to a client whose copy is
// still current (status.Answer).
func (s *statusEndpoint) getStatus(w http.ResponseWriter, r *http.Request) {
	snap, at, ok := s.read(w, r)
	if !ok {
		return
	}
	st, tag, err := status.Answer(snap, modelOf(r), s.epoch, status.ContextOf(snap, s.now()), r.Header["If-None-Match"])
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if st == nil {
		writeNotModified(w, tag, at)
		return
	}
	w.Header().Set("ETag", tag)
	st.Index = at
	reply.Indexed(w, http.StatusOK, at, st)
}

// writeNotModified answers a revalidated status: its tag, and the index
// the answer is current at.
func writeNotModified(w http.ResponseWriter, tag string, index uint64) {
	h := w.Header()
	h.Set("ETag", tag)
	h.Set(api.HeaderIndex, strconv.FormatUint(index, 10))
	w.WriteHeader(http.StatusNotModified)
}

// watch streams a model's changes: a reset frame (full status) when the
// client has no usable index, then delta frames by raft index, and
// keepalives. A client resumes with ?since=<last index>.
func (s *statusEndpoint) watch(w http.ResponseWriter, r *http.Request) {
	model := modelOf(r)
	since, ok := s.since(w, r)
	if !ok {
		return
	}
	if _, err := lookup.Model(s.b.Store().Snapshot(), model); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	conn, err := upgradeStream(w, r)
	if err != nil {
		return // the upgrader has answered
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer conn.Close()
	// Reader pump: notices the client going away; we expect no messages.
	go func() {
		defer cancel()
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	go func() { // close promptly on server shutdown
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := s.streamModel(ctx, conn, model, since); err != nil && ctx.Err() == nil {
		s.log.Debug("watch ended", "model", model, "err", err)
	}
}

func (s *statusEndpoint) streamModel(ctx context.Context, conn *websocket.Conn, model string, since uint64) error {
	send := func(f *api.WatchFrame) error {
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		return conn.WriteJSON(f)
	}
	reset := func() (uint64, error) {
		snap := s.b.Store().Snapshot()
		idx, err := snap.LatestIndex()
		if err != nil {
			return 0, err
		}
		st, err := status.Build(snap, model, status.ContextOf(snap, s.now()))
		if err != nil {
			return 0, err
		}
		st.Index = idx
		return idx, send(&api.WatchFrame{Type: api.FrameReset, Index: idx, Status: st, Mark: s.mark(idx)})
	}
	return s.follow(ctx, since, follower{
		model: model,
		reset: reset,
		keepalive: func(idx uint64) error {
			return send(&api.WatchFrame{Type: api.FrameKeepalive, Index: idx, Mark: s.mark(idx)})
		},
		events: func(idx uint64, evs []stream.Event) (bool, error) {
			frame := &api.WatchFrame{Type: api.FrameDelta, Index: idx, Mark: s.mark(idx)}
			for _, ev := range evs {
				if !excludedKinds[ev.Kind] {
					frame.Deltas = append(frame.Deltas, api.WatchDelta{Kind: ev.Kind, Key: ev.Key, Op: ev.Op, Object: ev.Object})
				}
			}
			if len(frame.Deltas) == 0 {
				return false, nil
			}
			return true, send(frame)
		},
	})
}
