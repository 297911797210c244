package state

import (
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// Controller returns the controller record, or nil before ControllerInit.
func (r *reader) Controller() (*api.Controller, error) {
	all, err := list[api.Controller](r, tables.Controller, "id")
	if err != nil || len(all) == 0 {
		return nil, err
	}
	return all[0], nil
}

// ListControllerNodes returns the raft members, by ID.
func (r *reader) ListControllerNodes() ([]*api.ControllerNode, error) {
	return list[api.ControllerNode](r, tables.ControllerNodes, "id")
}

// UserByName returns a local user, or nil.
func (r *reader) UserByName(name string) (*api.User, error) {
	return first[api.User](r, tables.Users, "id", name)
}

// ListUsers returns every local user, by name.
func (r *reader) ListUsers() ([]*api.User, error) {
	return list[api.User](r, tables.Users, "id")
}

// CredentialByTag returns a credential, or nil.
func (r *reader) CredentialByTag(tag string) (*api.Credential, error) {
	return first[api.Credential](r, tables.Credentials, "id", tag)
}

// controllerInit records the controller; repeating it with the same UUID
// updates name and CA, a different UUID is a conflict.
func controllerInit(t *Txn, req *ControllerInitRequest) (*api.Controller, error) {
	if req.UUID == "" || req.Name == "" {
		return nil, api.Errorf(api.CodeInvalid, "controller uuid and name are required")
	}
	cur, err := t.Controller()
	if err != nil {
		return nil, err
	}
	c := &api.Controller{UUID: req.UUID, Name: req.Name, CACert: req.CACert}
	if cur != nil {
		if cur.UUID != req.UUID {
			return nil, api.Errorf(api.CodeConflict, "controller already initialised as %q", cur.UUID)
		}
		c.Cloud, c.Region, c.Meta = cur.Cloud, cur.Region, cur.Meta
	}
	return c, t.put(tables.Controller, c)
}

// setPlacement records where a hub placed the controller (api.CheckPlacement).
func setPlacement(t *Txn, req *SetPlacementRequest) (*api.Controller, error) {
	if err := api.CheckPlacement(req.Cloud, req.Region); err != nil {
		return nil, err
	}
	cur, err := t.Controller()
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, api.Errorf(api.CodeNotFound, "controller not initialised yet")
	}
	c := *cur
	c.Cloud, c.Region = req.Cloud, req.Region
	return &c, t.put(tables.Controller, &c)
}

// upsertControllerNode adds or updates a raft member.
func upsertControllerNode(t *Txn, req *UpsertControllerNodeRequest) (*api.ControllerNode, error) {
	n := req.Node
	if n.ID == "" || n.RaftAddr == "" {
		return nil, api.Errorf(api.CodeInvalid, "controller node id and raft address are required")
	}
	cur, err := first[api.ControllerNode](&t.reader, tables.ControllerNodes, "id", n.ID)
	if err != nil {
		return nil, err
	}
	n.Meta = api.Meta{}
	if cur != nil {
		n.Meta = cur.Meta
	}
	return &n, t.put(tables.ControllerNodes, &n)
}

// removeControllerNode removes a raft member.
func removeControllerNode(t *Txn, req *RemoveControllerNodeRequest) error {
	cur, err := first[api.ControllerNode](&t.reader, tables.ControllerNodes, "id", req.ID)
	if err != nil {
		return err
	}
	if cur == nil {
		return api.Errorf(api.CodeNotFound, "controller node %q not found", req.ID)
	}
	return t.del(tables.ControllerNodes, cur)
}

// upsertUser adds or updates a local user; an empty hash keeps the old one.
func upsertUser(t *Txn, req *UpsertUserRequest) (*api.User, error) {
	u := req.User
	if u.Name == "" {
		return nil, api.Errorf(api.CodeInvalid, "user name is required")
	}
	if u.Access != "superuser" && u.Access != "login" {
		return nil, api.Errorf(api.CodeInvalid, "user access must be superuser or login, not %q", u.Access)
	}
	cur, err := t.UserByName(u.Name)
	if err != nil {
		return nil, err
	}
	u.Meta = api.Meta{}
	u.PasswordHash = req.PasswordHash
	if cur != nil {
		u.Meta = cur.Meta
		u.CreatedAt = cur.CreatedAt
		if u.PasswordHash == "" {
			u.PasswordHash = cur.PasswordHash
		}
	}
	return &u, t.put(tables.Users, &u)
}

// removeUser removes a local user and its credential.
func removeUser(t *Txn, req *RemoveUserRequest) error {
	cur, err := t.UserByName(req.Name)
	if err != nil {
		return err
	}
	if cur == nil {
		return api.Errorf(api.CodeNotFound, "user %q not found", req.Name)
	}
	if err := t.del(tables.Users, cur); err != nil {
		return err
	}
	return t.deleteCredential("user-" + req.Name)
}

// setCredential sets an agent's or user's hashed secret.
func setCredential(t *Txn, req *SetCredentialRequest) (*api.Credential, error) {
	c := req.Credential
	if c.Tag == "" || c.Hash == "" {
		return nil, api.Errorf(api.CodeInvalid, "credential tag and hash are required")
	}
	if c.ModelUUID != "" {
		if _, err := t.aliveModel(c.ModelUUID); err != nil {
			return nil, err
		}
	}
	cur, err := t.CredentialByTag(c.Tag)
	if err != nil {
		return nil, err
	}
	c.Meta = api.Meta{}
	if cur != nil {
		c.Meta = cur.Meta
	}
	return &c, t.put(tables.Credentials, &c)
}

// removeCredential removes a credential.
func removeCredential(t *Txn, req *RemoveCredentialRequest) error {
	cur, err := t.CredentialByTag(req.Tag)
	if err != nil {
		return err
	}
	if cur == nil {
		return api.Errorf(api.CodeNotFound, "credential %q not found", req.Tag)
	}
	return t.del(tables.Credentials, cur)
}

// deleteCredential removes a credential if present.
func (t *Txn) deleteCredential(tag string) error {
	cur, err := t.CredentialByTag(tag)
	if err != nil || cur == nil {
		return err
	}
	return t.del(tables.Credentials, cur)
}
