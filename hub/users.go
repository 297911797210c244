package hub

import (
	"net/http"
	"slices"
	"time"

	"github.com/droverhq/drover/authz"
)

// User is one entry of GET /v1/users, as Juju's users lists them.
type User struct {
	Name        string `json:"name"`
	DisplayName string `json:"display-name,omitempty"`
	Kind        string `json:"kind"`
	Org         string `json:"org"`
	// Pending: granted access by email, never logged in.
	Pending   bool       `json:"pending,omitempty"`
	CreatedAt time.Time  `json:"created-at"`
	LastLogin *time.Time `json:"last-connection,omitempty"`
}

// handleListUsers answers GET /v1/users[?org=ORG]: the people and service
// accounts of the organizations the caller administers (a hub
// administrator's: all of them), and the caller. Others' identities are
// their administrators' business, so a plain member sees only themselves,
// as Juju's users does for a user without superuser.
func (s *Server) handleListUsers(w http.ResponseWriter, r *http.Request) {
	p, _ := PrincipalFrom(r.Context())
	orgs, err := s.list(r.Context(), p, authz.Administrator, authz.TypeOrganization)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	self := p.Identity.ID
	if org := r.URL.Query().Get("org"); org != "" {
		if slices.Contains(orgs, org) {
			orgs = []string{org}
		} else {
			orgs = []string{}
		}
		if p.Identity.Org != org {
			self = ""
		}
	}
	ids, err := s.store.ListIdentities(r.Context(), orgs, self)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]User, len(ids))
	for i, id := range ids {
		out[i] = User{Name: id.Name(), Kind: id.Kind, Org: id.Org, Pending: id.Pending(), CreatedAt: id.CreatedAt, LastLogin: id.LastLogin}
		if id.DisplayName != "" && id.DisplayName != out[i].Name {
			out[i].DisplayName = id.DisplayName
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": out})
}
