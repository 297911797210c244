package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Organization is a tenant.
type Organization struct {
	Name        string    `json:"name"`
	DisplayName string    `json:"display-name,omitempty"`
	CreatedAt   time.Time `json:"created-at"`
}

// Identity kinds.
const (
	KindUser           = "user"
	KindServiceAccount = "service-account"
)

// Identity is a person or service account known to the hub.
type Identity struct {
	ID          string     `json:"id"`
	Issuer      string     `json:"issuer"`
	Subject     string     `json:"subject"`
	Kind        string     `json:"kind"`
	Email       string     `json:"email,omitempty"`
	DisplayName string     `json:"display-name,omitempty"`
	Org         string     `json:"org"`
	CreatedAt   time.Time  `json:"created-at"`
	LastLogin   *time.Time `json:"last-login,omitempty"`
}

// Name is how the identity appears to people (audit actor, whoami).
func (i Identity) Name() string {
	switch {
	case i.Email != "":
		return i.Email
	case i.Kind == KindServiceAccount && i.DisplayName != "":
		return i.DisplayName // its client id
	}
	return i.Subject
}

// ensureOrg creates org (linked to the hub) unless it exists.
func ensureOrg(ctx context.Context, tx pgx.Tx, name string) error {
	tag, err := tx.Exec(ctx, `INSERT INTO organizations (name) VALUES ($1) ON CONFLICT DO NOTHING`, name)
	if err != nil {
		return pgErr("create organization "+name, err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	return addTuples(ctx, tx, authz.Tuple{User: authz.HubObject(), Relation: authz.RelHub, Object: authz.OrgObject(name)})
}

// EnsureOrganization creates the organization if it does not exist.
func (s *Store) EnsureOrganization(ctx context.Context, name string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return ensureOrg(ctx, tx, name) })
}

// OrganizationByName returns one organization.
func (s *Store) OrganizationByName(ctx context.Context, name string) (Organization, error) {
	var o Organization
	err := s.pool.QueryRow(ctx, `SELECT name, display_name, created_at FROM organizations WHERE name = $1`, name).
		Scan(&o.Name, &o.DisplayName, &o.CreatedAt)
	return o, pgErr("organization "+name, err)
}

// ListOrganizations returns the named organizations that exist, in byte
// order.
func (s *Store) ListOrganizations(ctx context.Context, names []string) ([]Organization, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, display_name, created_at FROM organizations
		WHERE name = ANY($1) ORDER BY name`, names)
	if err != nil {
		return nil, pgErr("list organizations", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Organization, error) {
		var o Organization
		return o, r.Scan(&o.Name, &o.DisplayName, &o.CreatedAt)
	})
}

const identityCols = `id, issuer, subject, kind, email, display_name, org, created_at, last_login`

func scanIdentity(r pgx.Row) (Identity, error) {
	var i Identity
	var id uuid.UUID
	err := r.Scan(&id, &i.Issuer, &i.Subject, &i.Kind, &i.Email, &i.DisplayName, &i.Org, &i.CreatedAt, &i.LastLogin)
	i.ID = id.String()
	return i, err
}

// Login records a successful login of (issuer, subject): on first login it
// creates the identity in org (creating the organization if needed) and
// makes it a member; later logins refresh email and display name. It
// returns the stored identity and whether it was created.
func (s *Store) Login(ctx context.Context, in Identity, org string, now time.Time) (Identity, bool, error) {
	if in.Issuer == "" || in.Subject == "" {
		return Identity{}, false, fmt.Errorf("store: login: %w: issuer and subject are required", ErrInvalid)
	}
	if in.Kind == "" {
		in.Kind = KindUser
	}
	var out Identity
	var created bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = scanIdentity(tx.QueryRow(ctx, `UPDATE identities SET email = $3, display_name = $4, last_login = $5
			WHERE issuer = $1 AND subject = $2 RETURNING `+identityCols, in.Issuer, in.Subject, in.Email, in.DisplayName, now))
		if err == nil {
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return pgErr("login", err)
		}
		if err := ensureOrg(ctx, tx, org); err != nil {
			return err
		}
		created = true
		out, err = scanIdentity(tx.QueryRow(ctx, `INSERT INTO identities (id, issuer, subject, kind, email, display_name, org, last_login)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+identityCols,
			uuid.New(), in.Issuer, in.Subject, in.Kind, in.Email, in.DisplayName, org, now))
		if err != nil {
			return pgErr("login", err)
		}
		return addTuples(ctx, tx, authz.Tuple{User: authz.UserObject(out.ID), Relation: authz.Member, Object: authz.OrgObject(out.Org)})
	})
	return out, created, err
}

// IdentityByID returns one identity.
func (s *Store) IdentityByID(ctx context.Context, id string) (Identity, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Identity{}, fmt.Errorf("identity %q: %w", id, ErrNotFound)
	}
	return s.identityWhere(ctx, "id = $1", id)
}

// ServiceAccountIdentity returns the identity a service account logs in
// as, by its client id (the name it shows under), once it has logged in.
func (s *Store) ServiceAccountIdentity(ctx context.Context, clientID string) (Identity, error) {
	return s.identityWhere(ctx, "kind = 'service-account' AND display_name = $1 ORDER BY created_at LIMIT 1", clientID)
}

// IdentityByEmail returns the identity with that email (people only).
func (s *Store) IdentityByEmail(ctx context.Context, email string) (Identity, error) {
	return s.identityWhere(ctx, "email = $1 AND kind = 'user'", email)
}

// IdentityBySubject returns the identity for (issuer, subject).
func (s *Store) IdentityBySubject(ctx context.Context, issuer, subject string) (Identity, error) {
	return s.identityWhere(ctx, "issuer = $1 AND subject = $2", issuer, subject)
}

func (s *Store) identityWhere(ctx context.Context, where string, args ...any) (Identity, error) {
	i, err := scanIdentity(s.pool.QueryRow(ctx, `SELECT `+identityCols+` FROM identities WHERE `+where, args...))
	return i, pgErr("identity", err)
}

// ServiceAccount is an OAuth client allowed to log in with client
// credentials, bound to one organization.
type ServiceAccount struct {
	ClientID    string `json:"client-id"`
	Org         string `json:"org"`
	DisplayName string `json:"display-name,omitempty"`
}

// UpsertServiceAccount registers (or moves) a service account, creating its
// organization if needed.
func (s *Store) UpsertServiceAccount(ctx context.Context, sa ServiceAccount) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := ensureOrg(ctx, tx, sa.Org); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO service_accounts (client_id, org, display_name) VALUES ($1, $2, $3)
			ON CONFLICT (client_id) DO UPDATE SET org = excluded.org, display_name = excluded.display_name`,
			sa.ClientID, sa.Org, sa.DisplayName)
		return pgErr("service account "+sa.ClientID, err)
	})
}

// ServiceAccountByClientID returns one service account.
func (s *Store) ServiceAccountByClientID(ctx context.Context, clientID string) (ServiceAccount, error) {
	var sa ServiceAccount
	err := s.pool.QueryRow(ctx, `SELECT client_id, org, display_name FROM service_accounts WHERE client_id = $1`, clientID).
		Scan(&sa.ClientID, &sa.Org, &sa.DisplayName)
	return sa, pgErr("service account "+clientID, err)
}
