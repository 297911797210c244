package apiserver

import (
	"net/http"
	"net/http/pprof"

	"github.com/go-chi/chi/v5"
)

// pprofRouter serves Go's profiles to controller superusers at
// /v1/debug/pprof/ (e.g. `go tool pprof https://.../v1/debug/pprof/profile`).
func pprofRouter() http.Handler {
	r := chi.NewRouter()
	r.Get("/", pprof.Index)
	r.Get("/cmdline", pprof.Cmdline)
	r.Get("/profile", pprof.Profile)
	r.Get("/symbol", pprof.Symbol)
	r.Get("/trace", pprof.Trace)
	r.Get("/{name}", func(w http.ResponseWriter, r *http.Request) {
		pprof.Handler(chi.URLParam(r, "name")).ServeHTTP(w, r)
	})
	return r
}
