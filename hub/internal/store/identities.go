package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Identities are the people and service accounts known to the hub.
type Identities struct{ *db }

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
	// DisabledAt is when an administrator disabled the identity (nil: it
	// is enabled).
	DisabledAt *time.Time `json:"disabled-at,omitempty"`
	// EmailVerified, given to Login, says the issuer vouches for Email:
	// only then does a first login take over a pending identity (one a
	// grant made by email before the person ever logged in).
	EmailVerified bool `json:"-"`
}

// Pending reports whether the identity was made by a grant by email and
// nobody has logged in as it yet.
func (i Identity) Pending() bool { return i.Issuer == "" }

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

const identityCols = `id, issuer, subject, kind, email, display_name, org, created_at, last_login, disabled_at`

func scanIdentity(r pgx.Row) (Identity, error) {
	var i Identity
	var id uuid.UUID
	err := r.Scan(&id, &i.Issuer, &i.Subject, &i.Kind, &i.Email, &i.DisplayName, &i.Org, &i.CreatedAt, &i.LastLogin, &i.DisabledAt)
	i.ID = id.String()
	return i, err
}

// Login records a successful login of (issuer, subject): on first login it
// creates the identity in org (creating the organization if needed) and
// makes it a member; later logins refresh email and display name. It
// returns the stored identity and whether it was created.
func (s *Identities) Login(ctx context.Context, in Identity, org string, now time.Time) (Identity, bool, error) {
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
			return refuseDisabled(out)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return pgErr("login", err)
		}
		created = true
		if in.Kind == KindUser && in.Email != "" && in.EmailVerified {
			// The first login of someone granted access by email: their
			// identity, grants and memberships are there already.
			out, err = scanIdentity(tx.QueryRow(ctx, `UPDATE identities SET issuer = $1, subject = $2, email = $3,
				display_name = $4, last_login = $5
				WHERE id = (SELECT id FROM identities WHERE issuer = '' AND kind = 'user' AND lower(email) = lower($3)
					ORDER BY created_at LIMIT 1 FOR UPDATE)
				RETURNING `+identityCols, in.Issuer, in.Subject, in.Email, in.DisplayName, now))
			if err == nil {
				return refuseDisabled(out)
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return pgErr("login", err)
			}
		}
		if err := ensureOrg(ctx, tx, org); err != nil {
			return err
		}
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

// Pending returns the identity of the person with that email who
// has not logged in yet, creating it in org (a member, as a login would
// make them) when there is none: grants and memberships can then name
// them before their first login, which takes the identity over (Login,
// with a verified email). Issuer "" marks it; its subject is the email.
func (s *Identities) Pending(ctx context.Context, email, org string) (Identity, error) {
	email = strings.ToLower(email)
	var out Identity
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = scanIdentity(tx.QueryRow(ctx, `SELECT `+identityCols+` FROM identities
			WHERE kind = 'user' AND lower(email) = $1 ORDER BY issuer = '', created_at LIMIT 1`, email))
		if err == nil || !errors.Is(err, pgx.ErrNoRows) {
			return pgErr("identity "+email, err)
		}
		if err := ensureOrg(ctx, tx, org); err != nil {
			return err
		}
		out, err = scanIdentity(tx.QueryRow(ctx, `INSERT INTO identities (id, issuer, subject, kind, email, org)
			VALUES ($1, '', $2, 'user', $2, $3) ON CONFLICT (issuer, subject) DO UPDATE SET email = excluded.email
			RETURNING `+identityCols, uuid.New(), email, org))
		if err != nil {
			return pgErr("identity "+email, err)
		}
		return addTuples(ctx, tx, authz.Tuple{User: authz.UserObject(out.ID), Relation: authz.Member, Object: authz.OrgObject(out.Org)})
	})
	return out, err
}

// ByID returns one identity.
func (s *Identities) ByID(ctx context.Context, id string) (Identity, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Identity{}, fmt.Errorf("identity %q: %w", id, ErrNotFound)
	}
	return s.identityWhere(ctx, "id = $1", id)
}

// Enabled answers which of ids name identities that exist and
// are not disabled, in one query (the hub's check of its long-lived calls
// after a permission change).
func (s *Identities) Enabled(ctx context.Context, ids []string) (map[string]bool, error) {
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if uuid.Validate(id) == nil {
			valid = append(valid, id)
		}
	}
	rows, _ := s.pool.Query(ctx, `SELECT id::text FROM identities WHERE id = ANY($1::uuid[]) AND disabled_at IS NULL`, valid)
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, pgErr("enabled identities", err)
	}
	enabled := make(map[string]bool, len(found))
	for _, id := range found {
		enabled[id] = true
	}
	return enabled, nil
}

// ByClientID returns the identity a service account logs in
// as, by its client id (the name it shows under), once it has logged in.
func (s *Identities) ByClientID(ctx context.Context, clientID string) (Identity, error) {
	return s.identityWhere(ctx, "kind = 'service-account' AND display_name = $1 ORDER BY created_at LIMIT 1", clientID)
}

// ByEmail returns the identity with that email (people only; the
// email's case does not matter), one who logged in before a pending one.
func (s *Identities) ByEmail(ctx context.Context, email string) (Identity, error) {
	return s.identityWhere(ctx, "lower(email) = lower($1) AND kind = 'user' ORDER BY issuer = '', created_at LIMIT 1", email)
}

// BySubject returns the identity for (issuer, subject).
func (s *Identities) BySubject(ctx context.Context, issuer, subject string) (Identity, error) {
	return s.identityWhere(ctx, "issuer = $1 AND subject = $2", issuer, subject)
}

func (s *Identities) identityWhere(ctx context.Context, where string, args ...any) (Identity, error) {
	i, err := scanIdentity(s.pool.QueryRow(ctx, `SELECT `+identityCols+` FROM identities WHERE `+where, args...))
	return i, pgErr("identity", err)
}

// ServiceAccounts are the OAuth clients allowed to log in with client
// credentials. A service account's identity, once it has logged in, is
// one of Identities (ByClientID).
type ServiceAccounts struct{ *db }

// ServiceAccount is an OAuth client allowed to log in with client
// credentials, bound to one organization.
type ServiceAccount struct {
	ClientID    string `json:"client-id"`
	Org         string `json:"org"`
	DisplayName string `json:"display-name,omitempty"`
}

// Upsert registers (or moves) a service account, creating its
// organization if needed.
func (s *ServiceAccounts) Upsert(ctx context.Context, sa ServiceAccount) error {
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

// ByClientID returns one service account.
func (s *ServiceAccounts) ByClientID(ctx context.Context, clientID string) (ServiceAccount, error) {
	var sa ServiceAccount
	err := s.pool.QueryRow(ctx, `SELECT client_id, org, display_name FROM service_accounts WHERE client_id = $1`, clientID).
		Scan(&sa.ClientID, &sa.Org, &sa.DisplayName)
	return sa, pgErr("service account "+clientID, err)
}

// List returns the identities of orgs, and the one whose id is
// self, by name (byte order) then id.
func (s *Identities) List(ctx context.Context, orgs []string, self string) ([]Identity, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+identityCols+` FROM identities
		WHERE org = ANY($1) OR id::text = $2
		ORDER BY identity_name(email, kind, display_name, subject) COLLATE "C", id`, orgs, self)
	if err != nil {
		return nil, pgErr("list identities", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Identity, error) { return scanIdentity(r) })
}

// ErrDisabled refuses a disabled identity its login.
var ErrDisabled = errors.New("store: disabled")

// refuseDisabled fails a login (rolling its transaction back) as a
// disabled identity.
func refuseDisabled(i Identity) error {
	if i.DisabledAt != nil {
		return fmt.Errorf("user %s is disabled: %w", i.Name(), ErrDisabled)
	}
	return nil
}

// SetDisabled disables (at now) or enables an identity. Disabling
// also ends its sessions (their refresh tokens stop working); either way
// every hub replica drops what it cached about who is who.
func (s *Identities) SetDisabled(ctx context.Context, id string, disabled bool, now time.Time) (Identity, error) {
	var out Identity
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = scanIdentity(tx.QueryRow(ctx, `UPDATE identities
			SET disabled_at = CASE WHEN $2 THEN coalesce(disabled_at, $3) END
			WHERE id = $1 RETURNING `+identityCols, id, disabled, now))
		if err != nil {
			return pgErr("identity "+id, err)
		}
		if disabled {
			if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE identity_id = $1`, id); err != nil {
				return pgErr("end sessions", err)
			}
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, '')`, authzChannel)
		return pgErr("notify", err)
	})
	return out, err
}

// OwnsModelsError refuses to remove an identity that owns models.
type OwnsModelsError struct {
	Name   string
	Models []string // OWNER/NAME, as drover names them
}

func (e *OwnsModelsError) Error() string {
	return fmt.Sprintf("%s owns %s", e.Name, strings.Join(e.Models, ", "))
}

// Remove deletes an identity with its memberships, its sessions
// and every tuple naming it (its grants), in one transaction; audit
// entries keep its id and name. One that owns models is refused with an
// *OwnsModelsError: their ownership must go elsewhere first.
func (s *Identities) Remove(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		i, err := scanIdentity(tx.QueryRow(ctx, `SELECT `+identityCols+` FROM identities WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return pgErr("identity "+id, err)
		}
		rows, _ := tx.Query(ctx, `SELECT concat_ws('/', nullif(owner_name, ''), name) FROM models WHERE owner = $1 ORDER BY 1`, id)
		owned, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return pgErr("owned models", err)
		}
		if len(owned) > 0 {
			return &OwnsModelsError{Name: i.Name(), Models: owned}
		}
		if err := removeTuplesOn(ctx, tx, []string{}, []string{authz.UserObject(id)}); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM identities WHERE id = $1`, id)
		return pgErr("identity "+id, err)
	})
}

// Groups returns the groups (ORG/NAME) an identity is a member of,
// in byte order.
func (s *Identities) Groups(ctx context.Context, id string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT g.org || '/' || g.name FROM group_members m JOIN groups g ON g.id = m.group_id
		WHERE m.identity_id = $1 ORDER BY (g.org || '/' || g.name) COLLATE "C"`, id)
	if err != nil {
		return nil, pgErr("identity groups", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
