package gate

import "github.com/droverhq/drover/authz"

// Level is an access level's relation, and whether it may be granted to
// everyone.
type Level struct {
	Rel    authz.Relation
	Public bool
}

// Levels maps Juju-style access levels to relations, per target type;
// Public marks the levels that may be granted to everyone.
var Levels = map[string]map[string]Level{
	authz.TypeModel: {"read": {authz.Reader, true}, "write": {authz.Writer, false},
		"admin": {authz.Administrator, false}, "audit_viewer": {authz.AuditViewer, false}},
	authz.TypeController: {"login": {authz.Reader, true}, "add-model": {authz.CanAddModel, true},
		"superuser": {authz.Administrator, false}, "audit_viewer": {authz.AuditViewer, false}},
	authz.TypeOrganization: {"member": {authz.Member, false}, "add-model": {authz.CanAddModel, false},
		"admin": {authz.Administrator, false}, "audit_viewer": {authz.AuditViewer, false}},
}
