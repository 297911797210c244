package hub

import (
	"context"
	"net/http"
	"time"
)

// restoringMessage answers API requests while OpenFGA is being given back
// the tuples the database expects (checkRestore).
const restoringMessage = "the hub is restoring its permission service's tuples from its database after a start " +
	"(try again shortly; 'drover controllers' works again once it is done)"

// checkRestore finds whether OpenFGA has kept the hub's tuples: a new or
// emptied store (an OpenFGA in memory that restarted, another store name)
// lacks the first or last tuple the database expects. Until the outbox
// has delivered the start's repairs, permission checks would then deny
// what the database grants and listings would miss models, so the API
// answers 503 meanwhile (restoringMessage) and /readyz says so.
func (s *Server) checkRestore(ctx context.Context) error {
	sample, err := s.store.Outbox.SampleExpectedTuples(ctx)
	if err != nil {
		return err
	}
	for _, t := range sample {
		ok, err := s.authz.Has(ctx, t)
		if err != nil {
			return err
		}
		if !ok {
			s.restoring.Store(true)
			s.restoreStart = time.Now()
			s.cfg.Logger.Warn("OpenFGA lacks the hub's tuples (a new or emptied store): the API answers 503 until they are restored from PostgreSQL",
				"missing", t.String())
			// Not for ever: a restore that cannot finish (OpenFGA refusing
			// what the outbox delivers) must not keep the API down.
			limit := s.cfg.restoreLimit
			time.AfterFunc(limit, func() {
				if s.restoring.CompareAndSwap(true, false) {
					s.cfg.Logger.Error("OpenFGA's tuples are not restored yet: serving the API anyway (permissions may be denied that the database grants until the outbox has delivered them; see drover_hub_authz_outbox_undelivered)",
						"after", limit.String())
				}
			})
			return nil
		}
	}
	return nil
}

// restored is the outbox's Restored: the start's repairs are delivered.
func (s *Server) restored() {
	if s.restoring.CompareAndSwap(true, false) {
		s.cfg.Logger.Info("OpenFGA holds the hub's tuples again: serving the API", "took", time.Since(s.restoreStart).Round(time.Millisecond).String())
	}
}

// whileRestoring answers 503 to API requests until OpenFGA holds the
// tuples the database expects.
func (s *Server) whileRestoring(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.restoring.Load() {
			writeUnavailable(w, restoringMessage)
			return
		}
		next.ServeHTTP(w, r)
	})
}
