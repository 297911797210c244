package api

import "time"

// A hub's people and service accounts (GET /v1/users) and its groups (GET
// /v1/groups, GET /v1/groups/{group}): named sets of people and service
// accounts inside one organization, to which access is granted as to a
// user.

// Group is one group as a hub lists it.
type Group struct {
	ID          string    `json:"id"`
	Org         string    `json:"org"`
	Name        string    `json:"name"`
	CreatedAt   time.Time `json:"created-at"`
	MemberCount int       `json:"member-count"`
}

// GroupDetails is a group with its members and the grants made to it.
type GroupDetails struct {
	Group
	Members []GroupMember `json:"members"`
	Grants  []GroupGrant  `json:"grants"`
}

// GroupMember is a member named as drover names identities: a person by
// email, a service account by its client id.
type GroupMember struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "user" or "service-account"
}

// GroupGrant is one grant made to a group, in drover grant's words: a
// level ("read") on a target ("model prod", "controller east",
// "organization acme"); Object is the target's OpenFGA object.
type GroupGrant struct {
	Level  string `json:"level"`
	Target string `json:"target"`
	Object string `json:"object"`
}

// HubUser is a person or service account as a hub lists them (GET /v1/users)
// and shows one (GET /v1/users/{user}, with Groups).
type HubUser struct {
	Name        string `json:"name" yaml:"name"`
	DisplayName string `json:"display-name,omitempty" yaml:"display-name,omitempty"`
	Kind        string `json:"kind" yaml:"kind"` // "user" or "service-account"
	Org         string `json:"org" yaml:"org"`
	// Pending: granted access by email, never logged in.
	Pending   bool       `json:"pending,omitempty" yaml:"pending,omitempty"`
	Disabled  bool       `json:"disabled,omitempty" yaml:"disabled,omitempty"`
	CreatedAt time.Time  `json:"created-at" yaml:"created-at"`
	LastLogin *time.Time `json:"last-connection,omitempty" yaml:"last-connection,omitempty"`
	// Groups (ORG/NAME) the user is a member of: GET /v1/users/{user} only.
	Groups []string `json:"groups,omitempty" yaml:"groups,omitempty"`
}
