package authn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/hubtest"
)

// TestOnlyAVerifiedEmailMatches: a login matches by email (the --admin
// bootstrap, a grant made to the email before the first login) only when
// the issuer says email_verified true; with the claim false or absent the
// person logs in, under their subject, and picks up nothing by email.
func TestOnlyAVerifiedEmailMatches(t *testing.T) {
	const admin, granted = "root@example.com", "carol@example.com"
	yes, no := true, false
	for _, c := range []struct {
		name     string
		verified *bool
		match    bool
	}{{"absent", nil, false}, {"false", &no, false}, {"true", &yes, true}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			st := hubtest.Store(t)
			s := &Service{store: st, cfg: Config{DefaultOrg: "acme", Admins: []string{admin}, Now: time.Now,
				AwaitAuthz: func(context.Context) {}}}
			pending, err := st.Identities.Pending(ctx, granted, "acme")
			if err != nil {
				t.Fatal(err)
			}
			model := authz.ModelObject("00000000-0000-0000-0000-000000000001")
			if err := st.Grants.Add(ctx, authz.Tuple{User: authz.UserObject(pending.ID), Relation: authz.Reader, Object: model}); err != nil {
				t.Fatal(err)
			}

			root, err := s.login(ctx, &oidc.IDToken{Issuer: "https://idp.test", Subject: "sub-root"},
				idClaims{Email: admin, EmailVerified: c.verified})
			if err != nil {
				t.Fatal(err)
			}
			hubTuples, err := st.Grants.On(ctx, authz.HubObject())
			if err != nil {
				t.Fatal(err)
			}
			isAdmin := false
			for _, tu := range hubTuples {
				isAdmin = isAdmin || (tu.User == authz.UserObject(root.ID) && tu.Relation == authz.Administrator)
			}
			if isAdmin != c.match {
				t.Errorf("email_verified %s: the --admin email made hub administrator: %v, want %v", c.name, isAdmin, c.match)
			}
			if want := map[bool]string{true: admin, false: "sub-root"}[c.match]; root.Name() != want {
				t.Errorf("email_verified %s: the identity shows (and is audited) as %q, want %q", c.name, root.Name(), want)
			}

			carol, err := s.login(ctx, &oidc.IDToken{Issuer: "https://idp.test", Subject: "sub-carol"},
				idClaims{Email: granted, EmailVerified: c.verified})
			if err != nil {
				t.Fatal(err)
			}
			if took := carol.ID == pending.ID; took != c.match {
				t.Errorf("email_verified %s: the login took over the grant made to %s: %v, want %v", c.name, granted, took, c.match)
			}
			// A grant by email made after the login goes to the person only
			// when their email is verified.
			later, err := st.Identities.Pending(ctx, granted, "acme")
			if err != nil {
				t.Fatal(err)
			}
			if c.match != (later.ID == carol.ID) {
				t.Errorf("email_verified %s: a later grant to %s names %s (%s), the login is %s", c.name, granted, later.ID, fmt.Sprint(later.Pending()), carol.ID)
			}
		})
	}
}
