package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// BenchmarkVisibleModels lists 10,000 models visible through an
// organization, the query behind GET /v1/models for an administrator;
// every model has one of ten owners.
func BenchmarkVisibleModels(b *testing.B) {
	s, _ := newStore(b)
	ctx := b.Context()
	if err := s.Organizations.Ensure(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	var ctrls []string
	for i := range 10 {
		c := store.Controller{UUID: uuid.NewString(), Name: fmt.Sprintf("c%d", i), Org: "bench", APIAddresses: []string{"127.0.0.1:1"}}
		if err := s.Controllers.Upsert(ctx, c); err != nil {
			b.Fatal(err)
		}
		ctrls = append(ctrls, c.UUID)
	}
	var owners []string
	for i := range 10 {
		id, _, err := s.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: fmt.Sprint("owner-", i),
			Email: fmt.Sprintf("owner-%d@example.com", i)}, "bench", time.Now())

		if err != nil {
			b.Fatal(err)
		}
		owners = append(owners, id.ID)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO models (uuid, name, org, owner, controller_uuid, status, application_count)
		SELECT gen_random_uuid(), 'm-' || i, 'bench', ($2::uuid[])[1 + i % 10], ($1::uuid[])[1 + i % 10], 'available', i % 7
		FROM generate_series(1, 10000) AS i`, ctrls, owners); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	v := store.Visibility{Orgs: []string{"bench"}, Controllers: ctrls, Subjects: []string{"user:x", authz.Everyone},
		Relations: []authz.Relation{authz.Reader, authz.Writer, authz.Administrator}}
	for b.Loop() {
		n := 0
		err := s.Models.Visible(ctx, v, func(m *store.ModelRow) error {
			if len(m.OwnerName) > 0 {
				n++
			}
			return nil
		})
		if err != nil || n != 10000 {
			b.Fatalf("%d models named their owner, %v", n, err)
		}
	}
}
