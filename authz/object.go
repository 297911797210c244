package authz

import (
	"errors"
	"fmt"
	"strings"
)

// Relation is a relation name from model.fga.
type Relation string

// Relations defined in model.fga. The parent links (RelHub, RelOrganization,
// RelController, RelModel) are structural: the hub writes them when it
// creates the child object, never as a grant.
const (
	Administrator      Relation = "administrator"
	Writer             Relation = "writer"
	Reader             Relation = "reader"
	Member             Relation = "member"
	AuditViewer        Relation = "audit_viewer"
	CanAddModel        Relation = "can_add_model"
	CanAddController   Relation = "can_add_controller"
	CanAddOrganization Relation = "can_add_organization"
	Consumer           Relation = "consumer"

	RelHub          Relation = "hub"
	RelOrganization Relation = "organization"
	RelController   Relation = "controller"
	RelModel        Relation = "model"
)

// Object types defined in model.fga.
const (
	TypeUser             = "user"
	TypeGroup            = "group"
	TypeHub              = "hub"
	TypeOrganization     = "organization"
	TypeController       = "controller"
	TypeModel            = "model"
	TypeApplicationOffer = "applicationoffer"
)

// HubID is the id of the single hub object.
const HubID = "drover"

// Everyone is the user wildcard: a tuple with it grants the relation to
// every user (Juju's everyone@external). model.fga allows it only on
// reader-like relations.
const Everyone = "user:*"

// ErrInvalidObject is returned by ParseObject for a malformed object string.
var ErrInvalidObject = errors.New("authz: invalid object")

// Tuple is one relationship: User has Relation on Object. User is a user
// ("user:alice"), the wildcard Everyone, or a userset ("group:ops#member").
type Tuple struct {
	User     string   `json:"user" yaml:"user"`
	Relation Relation `json:"relation" yaml:"relation"`
	Object   string   `json:"object" yaml:"object"`
}

func (t Tuple) String() string {
	return t.User + " " + string(t.Relation) + " " + t.Object
}

// UserObject names a user by hub identity id.
func UserObject(id string) string { return TypeUser + ":" + id }

// GroupObject names a group.
func GroupObject(name string) string { return TypeGroup + ":" + name }

// GroupMembers is the userset of a group's members, used as the user of a
// tuple that grants something to the whole group.
func GroupMembers(name string) string { return GroupObject(name) + "#" + string(Member) }

// HubObject names the hub.
func HubObject() string { return TypeHub + ":" + HubID }

// OrgObject names an organization (tenant).
func OrgObject(name string) string { return TypeOrganization + ":" + name }

// ControllerObject names a controller (spoke) by UUID.
func ControllerObject(uuid string) string { return TypeController + ":" + uuid }

// ModelObject names a model by UUID.
func ModelObject(uuid string) string { return TypeModel + ":" + uuid }

// OfferObject names an application offer by UUID.
func OfferObject(uuid string) string { return TypeApplicationOffer + ":" + uuid }

// ParseObject splits "type:id" into its parts. A userset suffix
// ("#member") is not part of an object and is rejected.
func ParseObject(s string) (typ, id string, err error) {
	typ, id, ok := strings.Cut(s, ":")
	if !ok || typ == "" || id == "" || strings.ContainsAny(id, ":#") || strings.ContainsAny(typ, "#") {
		return "", "", fmt.Errorf("%w: %q", ErrInvalidObject, s)
	}
	return typ, id, nil
}

// ObjectID returns the id part of "type:id", or an error if s is not an
// object of type typ.
func ObjectID(typ, s string) (string, error) {
	t, id, err := ParseObject(s)
	if err != nil {
		return "", err
	}
	if t != typ {
		return "", fmt.Errorf("%w: %q is not a %s", ErrInvalidObject, s, typ)
	}
	return id, nil
}
