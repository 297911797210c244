package hub

import (
	"context"
	"net/http"
	"sync"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/internal/jsonw"
)

// handleListModels answers from the model index, with no fan-out to spokes
// and no permission check per model (visibleModels). The answer is
// streamed as PostgreSQL returns rows, in chunks of listChunk bytes, so
// the client decodes while the hub still reads; a failure after the first
// chunk aborts the response (the client sees a broken stream, never a
// short list).
func (s *Server) handleListModels(w http.ResponseWriter, r *http.Request) {
	p, _ := PrincipalFrom(r.Context())
	b := make([]byte, 0, listChunk+1024)
	b = append(b, `{"models":[`...)
	started, n := false, 0
	err := s.visibleModels(r.Context(), p, func(m *store.ModelRow) error {
		if n > 0 {
			b = append(b, ',')
		}
		b = appendModel(b, m)
		n++
		if len(b) < listChunk {
			return nil
		}
		if !started {
			writeJSONHeader(w, http.StatusOK)
			started = true
		}
		_, err := w.Write(b)
		b = b[:0]
		return err
	})
	switch {
	case err != nil && started:
		s.cfg.Logger.Warn("model listing aborted", "err", err)
		panic(http.ErrAbortHandler)
	case err != nil:
		s.writeError(w, r, err)
		return
	case !started:
		writeJSONHeader(w, http.StatusOK)
	}
	_, _ = w.Write(append(b, "]}\n"...))
}

// listChunk is how much of a listing is written at a time.
const listChunk = 32 << 10

// visibleModels returns the models p can read, sorted by organization and
// name. The authorization model (authz/model.fga) makes model#reader the
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
func (s *Server) visibleModels(ctx context.Context, p Principal, each func(*store.ModelRow) error) error {
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
		wg.Go(func() { got[i], errs[i] = s.list(ctx, p, a.rel, a.typ) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	subjects := make([]string, 0, 2+len(got[2]))
	subjects = append(subjects, p.Object, authz.Everyone)
	for _, g := range got[2] {
		subjects = append(subjects, authz.GroupMembers(g))
	}
	return s.store.VisibleModels(ctx, store.Visibility{Orgs: got[0], Controllers: got[1], Subjects: subjects,
		Relations: []authz.Relation{authz.Reader, authz.Writer, authz.Administrator}}, each)
}

// appendModel appends the JSON of m, byte for byte json.Marshal of the
// store.Model it describes (TestAppendModelMatchesMarshal).
func appendModel(b []byte, m *store.ModelRow) []byte {
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
	if len(m.Controller) > 0 {
		b = jsonw.String(append(b, `,"controller":`...), m.Controller)
	}
	b = jsonw.UUID(append(b, `,"controller-uuid":`...), m.ControllerUUID)
	if len(m.Cloud) > 0 {
		b = jsonw.String(append(b, `,"cloud":`...), m.Cloud)
	}
	if len(m.Region) > 0 {
		b = jsonw.String(append(b, `,"region":`...), m.Region)
	}
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
	return append(b, '}')
}
