package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/hub/internal/token"
)

// GET /v1/watch?since=N serves api.FederationFrame over a websocket: the
// controllers and models the caller may read, each row as GET
// /v1/controllers and GET /v1/models answer it, first whole (a reset) or
// as a delta after since, then a delta whenever the index changes, and a
// keepalive after a silence.
//
// Each stream remembers which rows it has sent and at which version. A
// delta carries the rows the caller reads written after the previous
// frame, the rows whose controller's place (name, cloud, region, status:
// part of a model's row) changed, and the removals of rows it sent. When
// permissions change, the stream reads what its caller may read again and
// sends the difference: rows now readable, and removals of those no
// longer are. A stream resumed with since does not know what its client
// holds: it takes what the caller reads now as sent and, of the removals
// made before it resumed, tells those of its caller's organizations'
// models and controllers, of models on the controllers it reads, and of
// shared controllers (another organization's stay unsaid).

// parseSince reads the since of GET /v1/watch: absent or 0 asks for a
// reset.
func parseSince(q string) (int64, error) {
	if q == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(q, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: since must be a non-negative integer", reply.ErrBadRequest)
	}
	return n, nil
}

// fedStream is one GET /v1/watch connection.
type fedStream struct {
	s      *Server
	p      authn.Principal
	cancel context.CancelFunc
	conn   *websocket.Conn

	index int64
	vis   store.Visibility
	// readCtrls are the controllers the caller reads, memberOrgs the
	// organizations it belongs to (removals told on a resumed stream).
	readCtrls, memberOrgs []string
	models                map[[16]byte]int64 // sent: version
	ctrls                 map[string]sentCtrl
	// resumedTo is, on a stream resumed with since, the highest version
	// taken when it resumed: removals up to it may be of rows the client
	// holds though the stream never sent them (0: a reset was sent).
	resumedTo int64
}

// sentCtrl is what a stream sent of a controller.
type sentCtrl struct {
	name    string
	version int64
	place   string
}

// upgrader accepts any origin: Authenticate already refused a
// cookie-authenticated upgrade from another one, and a bearer token is
// no browser's ambient credential.
var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) handleFederationWatch(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) {
		s.writeError(w, r, fmt.Errorf("%w: GET /v1/watch is a websocket", reply.ErrBadRequest))
		return
	}
	since, err := parseSince(r.URL.Query().Get("since"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, _ := authn.PrincipalFrom(r.Context())
	ctx, cancel := context.WithCancel(r.Context())
	if !p.Expires.IsZero() { // refused from then on, as a new request would be
		ctx, cancel = context.WithDeadline(r.Context(), p.Expires.Add(token.Leeway))
	}
	defer cancel()
	st := &fedStream{s: s, p: p, cancel: cancel, models: map[[16]byte]int64{}, ctrls: map[string]sentCtrl{}}
	if err := s.fed.open(st, s.cfg.MaxLiveCalls); err != nil {
		s.writeError(w, r, err)
		return
	}
	defer s.fed.close(st)
	// Subscribed before anything is read: no change is missed.
	sub := s.fed.broker.Subscribe(s.cfg.fedQueue)
	defer s.fed.broker.Unsubscribe(sub)
	if st.conn, err = upgrader.Upgrade(w, r, nil); err != nil {
		return // Upgrade answered the client
	}
	defer st.conn.Close()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		// Reads the client's close and control frames; it sends nothing else.
		for {
			if _, _, err := st.conn.NextReader(); err != nil {
				return err
			}
		}
	})
	g.Go(func() error {
		defer st.conn.Close() // ends the reader
		err := st.run(gctx, since, sub.C, sub.Gone())
		code, text := websocket.CloseNormalClosure, "stream ended"
		switch {
		case errors.Is(err, errSlowConsumer):
			code, text = websocket.CloseTryAgainLater, "too slow: resume with since"
			s.fedSlow.Add(1)
		case err != nil && gctx.Err() == nil:
			// gctx ends first when the client went away (its reader
			// failed): that is no failure of the stream's.
			code, text = websocket.CloseInternalServerErr, "resume with since"
			s.cfg.Logger.Warn("federation stream ended", "user", p.Identity.Name(), "err", err)
		}
		_ = st.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
		return err
	})
	_ = g.Wait()
}

// errSlowConsumer ends a stream that fell behind its notes.
var errSlowConsumer = errors.New("federation stream: the client does not keep up")

func (st *fedStream) run(ctx context.Context, since int64, notes <-chan indexNote, gone <-chan struct{}) error {
	select {
	case <-st.s.fed.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	st.index = st.s.fed.horizon()
	horizon, err := st.s.store.RemovalsHorizon(ctx)
	if err != nil {
		return err
	}
	if since <= 0 || since > st.index || since < horizon {
		err = st.reset(ctx)
	} else {
		err = st.resume(ctx, since)
	}
	if err != nil {
		return err
	}
	keep := time.NewTimer(st.s.cfg.fedKeepalive)
	defer keep.Stop()
	for {
		var err error
		sent := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-gone:
			return errSlowConsumer
		case n := <-notes:
			switch {
			case n.gap:
				st.index = max(st.index, n.index)
				err, sent = st.reset(ctx), true
			case n.authz:
				sent, err = st.permissionsChanged(ctx)
			case n.index > st.index:
				sent, err = st.delta(ctx, n.index)
			}
		case <-keep.C:
			err, sent = st.write(&api.FederationFrame{Type: api.FederationFrameKeepalive, Index: st.index}), true
		}
		if err != nil {
			return err
		}
		if sent {
			keep.Reset(st.s.cfg.fedKeepalive)
		}
	}
}

func (st *fedStream) write(f *api.FederationFrame) error {
	if err := st.conn.SetWriteDeadline(time.Now().Add(st.s.cfg.fedWriteTimeout)); err != nil {
		return err
	}
	if err := st.conn.WriteJSON(f); err != nil {
		return fmt.Errorf("%w: %w", errSlowConsumer, err)
	}
	return nil
}

// readable reads what the caller may read: its models' visibility, the
// controllers it reads and the organizations it belongs to.
func (st *fedStream) readable(ctx context.Context) error {
	var err error
	if st.vis, err = (readAPI{st.s}).visibility(ctx, st.p); err != nil {
		return err
	}
	if st.readCtrls, err = st.s.gate.List(ctx, st.p, authz.Reader, authz.TypeController); err != nil {
		return err
	}
	st.memberOrgs, err = st.s.gate.List(ctx, st.p, authz.Member, authz.TypeOrganization)
	return err
}

// controllers reads the controllers the caller reads, as GET
// /v1/controllers answers them.
func (st *fedStream) controllers(ctx context.Context) ([]store.Controller, error) {
	cs, err := st.s.store.Controllers.List(ctx, st.readCtrls, false)
	for i := range cs {
		cs[i].CACert = ""
	}
	return cs, err
}

func placeOf(c store.Controller) string {
	return c.Name + "\x00" + c.Cloud + "\x00" + c.Region + "\x00" + c.Status
}

// reset sends everything the caller reads.
func (st *fedStream) reset(ctx context.Context) error {
	if err := st.readable(ctx); err != nil {
		return err
	}
	f := &api.FederationFrame{Type: api.FederationFrameReset, Index: st.index}
	cs, err := st.controllers(ctx)
	if err != nil {
		return err
	}
	clear(st.ctrls)
	for _, c := range cs {
		if err := st.addController(f, c); err != nil {
			return err
		}
	}
	places, err := st.s.store.Controllers.Places(ctx)
	if err != nil {
		return err
	}
	clear(st.models)
	if err := st.s.store.Models.Visible(ctx, st.vis, func(m *store.ModelRow) error {
		st.addModel(f, m, places)
		return nil
	}); err != nil {
		return err
	}
	st.resumedTo = 0
	return st.write(f)
}

// resume sends what changed after since, the client holding it.
func (st *fedStream) resume(ctx context.Context, since int64) error {
	if err := st.readable(ctx); err != nil {
		return err
	}
	keys, err := st.s.store.Models.VisibleKeys(ctx, st.vis, nil)
	if err != nil {
		return err
	}
	for _, k := range keys {
		st.models[k.UUID] = k.Version
	}
	cs, err := st.controllers(ctx)
	if err != nil {
		return err
	}
	for _, c := range cs {
		// As of since: sent again by the delta below should it have
		// changed after.
		st.ctrls[c.UUID] = sentCtrl{name: c.Name, version: since, place: placeOf(c)}
	}
	if st.resumedTo, _, err = st.s.store.IndexHorizon(ctx); err != nil {
		return err
	}
	upto := st.index
	st.index = since
	_, err = st.deltaForce(ctx, upto, true)
	return err
}

func (st *fedStream) addController(f *api.FederationFrame, c store.Controller) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	f.Controllers = append(f.Controllers, b)
	st.ctrls[c.UUID] = sentCtrl{name: c.Name, version: c.Version, place: placeOf(c)}
	return nil
}

func (st *fedStream) addModel(f *api.FederationFrame, m *store.ModelRow, places map[[16]byte]store.Place) {
	f.Models = append(f.Models, appendModel(nil, m, places[m.ControllerUUID]))
	st.models[m.UUID] = m.Version
}

// delta sends what changed up to upto, if anything did.
func (st *fedStream) delta(ctx context.Context, upto int64) (bool, error) {
	return st.deltaForce(ctx, upto, false)
}

// deltaForce is delta; with force the frame goes out even empty (a
// resumed stream's first, which tells the client its index).
func (st *fedStream) deltaForce(ctx context.Context, upto int64, force bool) (bool, error) {
	f := &api.FederationFrame{Type: api.FederationFrameDelta, Index: upto}
	cs, err := st.controllers(ctx)
	if err != nil {
		return false, err
	}
	var moved [][16]byte
	now := map[string]bool{}
	for _, c := range cs {
		now[c.UUID] = true
		old, ok := st.ctrls[c.UUID]
		if ok && old.version >= c.Version {
			continue
		}
		if ok && old.place != placeOf(c) {
			var id [16]byte
			if u, err := parseUUID(c.UUID); err == nil {
				id = u
				moved = append(moved, id)
			}
		}
		if err := st.addController(f, c); err != nil {
			return false, err
		}
	}
	st.dropControllersNotIn(f, now)
	places, err := st.s.store.Controllers.Places(ctx)
	if err != nil {
		return false, err
	}
	if err := st.s.store.Models.VisibleChanged(ctx, st.vis, st.index, upto, moved, func(m *store.ModelRow) error {
		st.addModel(f, m, places)
		return nil
	}); err != nil {
		return false, err
	}
	rms, err := st.s.store.Removals(ctx, st.index, upto)
	if err != nil {
		return false, err
	}
	for _, rm := range rms {
		// What the client may hold of a resumed stream: its
		// organizations' rows, those on the controllers it reads, and the
		// shared controllers.
		mayHold := rm.Version <= st.resumedTo && (slices.Contains(st.memberOrgs, rm.Org) ||
			slices.Contains(st.readCtrls, rm.ControllerUUID) || rm.Kind == "controller" && rm.Org == "")
		switch rm.Kind {
		case "model":
			id, err := parseUUID(rm.ID)
			if err != nil {
				continue
			}
			if _, sent := st.models[id]; sent || mayHold {
				delete(st.models, id)
				f.Removed = append(f.Removed, api.FederationKey{Kind: "model", ID: rm.ID})
			}
		case "controller":
			// One the stream sent went with the list above.
			key := api.FederationKey{Kind: "controller", ID: rm.ID}
			if _, sent := st.ctrls[rm.ControllerUUID]; !sent && mayHold && !slices.Contains(f.Removed, key) {
				f.Removed = append(f.Removed, key)
			}
		}
	}
	st.index = upto
	if !force && len(f.Controllers)+len(f.Models)+len(f.Removed) == 0 {
		return false, nil
	}
	return true, st.write(f)
}

// permissionsChanged reads again what the caller may read and sends the
// difference.
func (st *fedStream) permissionsChanged(ctx context.Context) (bool, error) {
	ok, err := st.s.store.Identities.Enabled(ctx, []string{st.p.Identity.ID})
	if err != nil {
		return false, err
	}
	if !ok[st.p.Identity.ID] {
		return false, fmt.Errorf("%w: the caller was disabled or removed", reply.ErrForbidden)
	}
	if err := st.readable(ctx); err != nil {
		return false, err
	}
	f := &api.FederationFrame{Type: api.FederationFrameDelta, Index: st.index}
	cs, err := st.controllers(ctx)
	if err != nil {
		return false, err
	}
	now := map[string]bool{}
	for _, c := range cs {
		now[c.UUID] = true
		if _, ok := st.ctrls[c.UUID]; !ok {
			if err := st.addController(f, c); err != nil {
				return false, err
			}
		}
	}
	st.dropControllersNotIn(f, now)
	keys, err := st.s.store.Models.VisibleKeys(ctx, st.vis, nil)
	if err != nil {
		return false, err
	}
	visible := make(map[[16]byte]bool, len(keys))
	var added [][16]byte
	for _, k := range keys {
		visible[k.UUID] = true
		if _, ok := st.models[k.UUID]; !ok {
			added = append(added, k.UUID)
		}
	}
	for id := range st.models {
		if !visible[id] {
			delete(st.models, id)
			f.Removed = append(f.Removed, api.FederationKey{Kind: "model", ID: uuidString(id)})
		}
	}
	if len(added) > 0 {
		places, err := st.s.store.Controllers.Places(ctx)
		if err != nil {
			return false, err
		}
		if err := st.s.store.Models.RowsByUUID(ctx, added, func(m *store.ModelRow) error {
			st.addModel(f, m, places)
			return nil
		}); err != nil {
			return false, err
		}
	}
	if len(f.Controllers)+len(f.Models)+len(f.Removed) == 0 {
		return false, nil
	}
	return true, st.write(f)
}

func parseUUID(s string) ([16]byte, error) {
	u, err := uuid.Parse(s)
	return [16]byte(u), err
}

func uuidString(id [16]byte) string { return uuid.UUID(id).String() }

// dropControllersNotIn tells f the removal of every controller the stream
// sent that now does not name, and forgets it.
func (st *fedStream) dropControllersNotIn(f *api.FederationFrame, now map[string]bool) {
	for id, c := range st.ctrls {
		if !now[id] {
			f.Removed = append(f.Removed, api.FederationKey{Kind: "controller", ID: c.name})
			delete(st.ctrls, id)
		}
	}
}
