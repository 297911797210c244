package hub

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/indexer"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/internal/jsonw"
)

// handleListModels answers from the model index, with no fan-out to spokes
// and no permission check per model (visibility). It reads the visible
// models' keys (UUID and row version) in order, takes the JSON of the rows
// that have not changed since they were last listed from modelJSON, and
// reads only the others whole. When most are unknown (the first listing
// after a start), it reads the listing whole instead, streamed as
// PostgreSQL returns rows. Either way the answer goes out in chunks of
// listChunk bytes; a failure after the first chunk aborts the response
// (the client sees a broken stream, never a short list).
//
// ?user=U lists what identity U (an email, a client id or an identity id)
// can read, as Juju's 'models --user' does, to the administrators of U's
// organization (anyone else: 404, as if nobody had that name), and only
// the models the caller can read too: a grant U holds in another
// organization stays that organization's business.
func (s readAPI) handleListModels(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, _ := authn.PrincipalFrom(ctx)
	lw := &listWriter{w: w}
	var err error
	if ref := r.URL.Query().Get("user"); ref != "" {
		var u authn.Principal
		if u, err = s.principalForAdmin(ctx, p, ref); err == nil {
			err = s.listModels(ctx, u, lw, &p)
		}
	} else {
		err = s.listModels(ctx, p, lw, nil)
	}
	switch {
	case err != nil && lw.started:
		s.cfg.Logger.Warn("model listing aborted", "err", err)
		panic(http.ErrAbortHandler)
	case err != nil:
		s.writeError(w, r, err)
	default:
		lw.finish()
	}
}

// principalForAdmin is identity ref as a principal, for p who administers
// its organization (or is it); anyone else is told nobody has that name.
func (s readAPI) principalForAdmin(ctx context.Context, p authn.Principal, ref string) (authn.Principal, error) {
	id, err := s.identityByRef(ctx, ref)
	if err != nil {
		return authn.Principal{}, err
	}
	if id.ID != p.Identity.ID {
		ok, err := s.gate.Check(ctx, p, authz.Administrator, authz.OrgObject(id.Org))
		if err != nil {
			return authn.Principal{}, err
		}
		if !ok {
			return authn.Principal{}, unknownUser(ref)
		}
	}
	return authn.Principal{Identity: id, Object: authz.UserObject(id.ID)}, nil
}

// listModels writes the models p can read to lw; with seenBy, only those
// seenBy can read as well.
func (s readAPI) listModels(ctx context.Context, p authn.Principal, lw *listWriter, seenBy *authn.Principal) error {
	v, err := s.visibility(ctx, p)
	if err != nil {
		return err
	}
	keys, err := s.store.Models.VisibleKeys(ctx, v, nil)
	if err != nil {
		return err
	}
	if seenBy != nil {
		if keys, err = s.alsoVisible(ctx, *seenBy, keys); err != nil {
			return err
		}
	}
	places, err := s.store.Controllers.Places(ctx)
	if err != nil {
		return err
	}
	lw.places = placeJSON{places: places, json: map[[16]byte][]byte{}}
	listed := make([]*listedModel, len(keys))
	missing := s.modelJSON.lookup(keys, listed)
	if missing > len(keys)/2 && seenBy == nil {
		// A listing larger than the cache would only churn it: it is
		// read whole every time, as without one.
		keep := s.modelJSON.fits(len(keys))
		return s.store.Models.Visible(ctx, v, func(m *store.ModelRow) error {
			e := newListedModel(m)
			if keep {
				s.modelJSON.put(m.UUID, e)
			}
			return lw.add(e)
		})
	}
	if missing > 0 {
		at := make(map[[16]byte]int, missing)
		ids := make([][16]byte, 0, missing)
		for i, e := range listed {
			if e == nil {
				at[keys[i].UUID] = i
				ids = append(ids, keys[i].UUID)
			}
		}
		// A row written since its key was read comes newer; one deleted
		// since does not come, and is not listed.
		if err := s.store.Models.RowsByUUID(ctx, ids, func(m *store.ModelRow) error {
			e := newListedModel(m)
			s.modelJSON.put(m.UUID, e)
			listed[at[m.UUID]] = e
			return nil
		}); err != nil {
			return err
		}
	}
	// Every model is known: the answer's length is too, so it goes out
	// with a Content-Length, not chunked (a third fewer TLS records).
	n := len(listHead) + len(listTail) - 1
	for _, e := range listed {
		if e != nil {
			n += len(e.json) + len(lw.places.of(e.ctrl)) + 1
		}
	}
	lw.w.Header().Set("Content-Length", strconv.Itoa(max(n, len(listHead)+len(listTail))))
	for _, e := range listed {
		if e == nil {
			continue
		}
		if err := lw.add(e); err != nil {
			return err
		}
	}
	return nil
}

// alsoVisible keeps the keys of the models p can read.
func (s readAPI) alsoVisible(ctx context.Context, p authn.Principal, keys []store.ModelKey) ([]store.ModelKey, error) {
	v, err := s.visibility(ctx, p)
	if err != nil {
		return nil, err
	}
	theirs, err := s.store.Models.VisibleKeys(ctx, v, nil)
	if err != nil {
		return nil, err
	}
	seen := make(map[[16]byte]bool, len(theirs))
	for _, k := range theirs {
		seen[k.UUID] = true
	}
	return slices.DeleteFunc(keys, func(k store.ModelKey) bool { return !seen[k.UUID] }), nil
}

// listWriter writes a listing's JSON in chunks of listChunk bytes.
type listWriter struct {
	w       http.ResponseWriter
	places  placeJSON
	b       []byte
	n       int
	started bool
}

func (lw *listWriter) add(e *listedModel) error {
	if lw.b == nil {
		lw.b = append(make([]byte, 0, listChunk+1024), listHead...)
	}
	if lw.n > 0 {
		lw.b = append(lw.b, ',')
	}
	lw.n++
	lw.b = append(lw.b, e.json[:e.split]...)
	lw.b = append(lw.b, lw.places.of(e.ctrl)...)
	lw.b = append(lw.b, e.json[e.split:]...)
	if len(lw.b) < listChunk {
		return nil
	}
	if !lw.started {
		reply.JSONHeader(lw.w, http.StatusOK)
		lw.started = true
	}
	_, err := lw.w.Write(lw.b)
	lw.b = lw.b[:0]
	return err
}

// finish writes the rest of a listing that succeeded.
func (lw *listWriter) finish() {
	if !lw.started {
		reply.JSONHeader(lw.w, http.StatusOK)
	}
	if lw.b == nil {
		lw.b = append(lw.b, listHead...)
	}
	_, _ = lw.w.Write(append(lw.b, listTail...))
}

// A listing is listHead, the models separated by commas, and listTail.
const listHead, listTail = `{"models":[`, "]}\n"

// placeJSON writes where each controller is, each controller's JSON made
// once per listing.
type placeJSON struct {
	places map[[16]byte]store.Place
	json   map[[16]byte][]byte
}

// of returns the JSON of where ctrl is, from ',"controller"' to the region.
func (p placeJSON) of(ctrl [16]byte) []byte {
	j, ok := p.json[ctrl]
	if !ok {
		j = appendPlace(nil, ctrl, p.places[ctrl])
		p.json[ctrl] = j
	}
	return j
}

// listChunk is how much of a listing is written at a time.
const listChunk = 32 << 10

// visibility describes the models p can read. The authorization model (authz/model.fga) makes model#reader the
// union of
//
//   - the direct grants on the model (reader, writer or administrator) to
//     p, to everyone (user:*), or to a group p belongs to;
//   - administrator of the model's controller;
//   - administrator of the model's organization (which hub administrators
//     are of every organization).
//
// A ListObjects(reader, model) call walks that union per model, which for
// a user who administers an organization of 10,000 models takes hundreds
// of milliseconds. So OpenFGA answers the three small questions instead —
// which organizations and controllers p administers, and which groups p is
// in (nesting included) — and one PostgreSQL query over the model index
// and the hub's expected tuples (authz_tuples, the source of truth the
// outbox delivers to OpenFGA) takes the union. TestVisibleModelsMatchesListObjects
// holds this equal to ListObjects on random grants; see
// docs/decisions/0005-model-listing.md.
func (s readAPI) visibility(ctx context.Context, p authn.Principal) (store.Visibility, error) {
	asks := [...]struct {
		rel authz.Relation
		typ string
	}{
		{authz.Administrator, authz.TypeOrganization},
		{authz.Administrator, authz.TypeController},
		{authz.Member, authz.TypeGroup},
	}
	var (
		got  [len(asks)][]string
		errs [len(asks)]error
		wg   sync.WaitGroup
	)
	for i, a := range asks {
		wg.Go(func() { got[i], errs[i] = s.gate.List(ctx, p, a.rel, a.typ) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return store.Visibility{}, err
		}
	}
	subjects := make([]string, 0, 2+len(got[2]))
	subjects = append(subjects, p.Object, authz.Everyone)
	for _, g := range got[2] {
		subjects = append(subjects, authz.GroupMembers(g))
	}
	return store.Visibility{Orgs: got[0], Controllers: got[1], Subjects: subjects,
		Relations: []authz.Relation{authz.Reader, authz.Writer, authz.Administrator}}, nil
}

// appendModel appends the JSON of m on the controller at p, byte for byte
// json.Marshal of the store.Model it describes
// (TestAppendModelMatchesMarshal). A listing appends the three parts
// separately, the first and last kept by modelJSON.
func appendModel(b []byte, m *store.ModelRow, p store.Place) []byte {
	return appendModelTail(appendPlace(appendModelHead(b, m), m.ControllerUUID, p), m)
}

// appendModelHead appends m's JSON from its start to its owner.
func appendModelHead(b []byte, m *store.ModelRow) []byte {
	b = append(b, '{')
	b = jsonw.UUID(append(b, `"uuid":`...), m.UUID)
	b = jsonw.String(append(b, `,"name":`...), m.Name)
	b = jsonw.String(append(b, `,"org":`...), m.Org)
	if len(m.OwnerName) > 0 {
		b = jsonw.String(append(b, `,"owner":`...), m.OwnerName)
	}
	if m.HasOwner {
		b = jsonw.UUID(append(b, `,"owner-id":`...), m.Owner)
	}
	return b
}

// appendPlace appends a model's controller, controller UUID, cloud and
// region, and, when the hub has lost its connection to the controller,
// "controller-status": the model's other fields are then what the hub
// last heard.
func appendPlace(b []byte, ctrl [16]byte, p store.Place) []byte {
	if len(p.Name) > 0 {
		b = jsonw.String(append(b, `,"controller":`...), p.Name)
	}
	if string(p.Status) == indexer.StatusDisconnected {
		b = jsonw.String(append(b, `,"controller-status":`...), p.Status)
	}
	b = jsonw.UUID(append(b, `,"controller-uuid":`...), ctrl)
	if len(p.Cloud) > 0 {
		b = jsonw.String(append(b, `,"cloud":`...), p.Cloud)
	}
	if len(p.Region) > 0 {
		b = jsonw.String(append(b, `,"region":`...), p.Region)
	}
	return b
}

// appendModelTail appends m's JSON from its life to its end.
func appendModelTail(b []byte, m *store.ModelRow) []byte {
	b = jsonw.String(append(b, `,"life":`...), m.Life)
	if len(m.Status) > 0 {
		b = jsonw.String(append(b, `,"status":`...), m.Status)
	}
	b = jsonw.Int(append(b, `,"application-count":`...), int64(m.ApplicationCount))
	b = jsonw.Int(append(b, `,"unit-count":`...), int64(m.UnitCount))
	b = jsonw.Int(append(b, `,"machine-count":`...), int64(m.MachineCount))
	b = jsonw.Int(append(b, `,"event-index":`...), m.EventIndex)
	b = jsonw.Time(append(b, `,"created-at":`...), m.CreatedAt)
	b = jsonw.Time(append(b, `,"updated-at":`...), m.UpdatedAt)
	if len(m.MigrationPhase) > 0 {
		b = jsonw.String(append(b, `,"migration-phase":`...), m.MigrationPhase)
	}
	return append(b, '}')
}
