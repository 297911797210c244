package api

import (
	"bytes"
	"encoding/json"
	"time"
)

// A hub answers model listings from its index: {"models": [...]} whose
// entries carry the status as a plain string. The client reads both that
// and a controller's bare array, so callers see one shape.

// ModelIndex is what a hub's model index says about a model besides the
// Model fields: where it runs and how big it is, kept current from the
// controller's event stream. A listing from a hub sets Model.Index, so a
// caller needs no status call per model.
type ModelIndex struct {
	Org        string `json:"org"`
	OwnerID    string `json:"owner-id,omitempty"`
	Controller string `json:"controller,omitempty"`
	// ControllerStatus is "disconnected" when the hub has lost its
	// connection to the controller (the rest is what it last heard).
	ControllerStatus string `json:"controller-status,omitempty"`
	ControllerUUID   string `json:"controller-uuid"`
	Cloud            string `json:"cloud,omitempty"`
	Region           string `json:"region,omitempty"`
	Applications     int    `json:"application-count"`
	Units            int    `json:"unit-count"`
	Machines         int    `json:"machine-count"`
	// StatusSince is when the hub saw the model's status change (absent
	// when it does not know); the client fills Model.Status.Since from it.
	StatusSince *time.Time `json:"status-since,omitempty"`
	// Users are who hold a grant on the model itself; a hub shows them to
	// the model's administrators (GET /v1/models/{uuid}).
	Users []ModelUser `json:"users,omitempty"`
	// LastMigration is the model's latest migration, on GET /v1/models/{uuid}
	// (show-model's migration section).
	LastMigration *Migration `json:"last-migration,omitempty"`
}

// ModelUser is a user, a group or everyone with access to a model, as
// Juju's show-model lists them.
type ModelUser struct {
	Name        string     `json:"name"`
	DisplayName string     `json:"display-name,omitempty"`
	Kind        string     `json:"kind"`   // "user", "service-account", "group" or "everyone"
	Access      string     `json:"access"` // "admin", "write" or "read"
	LastLogin   *time.Time `json:"last-connection,omitempty"`
}

// applyIndex records x as m's index entry, and what it says that the
// Model fields of a hub's answer leave out.
func (m *Model) applyIndex(x *ModelIndex) {
	m.Index = x
	if x.StatusSince != nil && m.Status.Since.IsZero() {
		m.Status.Since = *x.StatusSince
	}
}

// modelList decodes a controller's or a hub's model list.
type modelList []Model

func (l *modelList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var wrapped struct {
			Models []struct {
				Model
				ModelIndex
			} `json:"models"`
		}
		if err := json.Unmarshal(b, &wrapped); err != nil {
			return err
		}
		*l = make(modelList, len(wrapped.Models))
		for i := range wrapped.Models {
			m := &wrapped.Models[i]
			(*l)[i] = m.Model
			(*l)[i].applyIndex(&m.ModelIndex)
		}
		return nil
	}
	var ms []Model
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	*l = ms
	return nil
}

// UnmarshalJSON accepts a Status object, or a bare status string (a hub's
// index summary).
func (s *Status) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*s = Status{}
		return json.Unmarshal(b, &s.Status)
	}
	type plain Status
	return json.Unmarshal(b, (*plain)(s))
}

// HubInfo is a hub's GET /v1/hub: its release and the URL its tokens name.
type HubInfo struct {
	Version string `json:"version"`
	URL     string `json:"url"`
}
