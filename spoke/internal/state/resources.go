package state

import (
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// ResourceByName returns one resource of an application, or nil.
func (r *reader) ResourceByName(model, app, name string) (*api.Resource, error) {
	return first[api.Resource](r, tables.Resources, "id", model, app, name)
}

// ResourcesByApplication returns an application's resources, by name.
func (r *reader) ResourcesByApplication(model, app string) ([]*api.Resource, error) {
	return list[api.Resource](r, tables.Resources, "application", model, app)
}

// attachResources is the AttachResources command: new content for some of
// an alive application's resources.
func attachResources(t *Txn, req *AttachResourcesRequest) (*api.Application, error) {
	a, err := t.aliveApplication(req.ModelUUID, req.App)
	if err != nil {
		return nil, err
	}
	changed, err := t.attachResources(a, req.Resources, req.Now)
	if err != nil || !changed {
		return a, err
	}
	a = copyApplication(a)
	a.CharmModifiedVersion++
	return a, t.put(tables.Applications, a)
}

// attachResources writes the uploads as a's resources: a resource whose
// content differs from its stored one (or that has none) gets the next
// revision. It reports whether any resource changed; the caller records
// that on the application.
func (t *Txn) attachResources(a *api.Application, ups []ResourceUpload, now time.Time) (bool, error) {
	changed := false
	for _, up := range ups {
		if err := validName("resource", up.Name); err != nil {
			return false, err
		}
		if len(up.SHA256) != 64 || up.Size < 0 {
			return false, api.Errorf(api.CodeInvalid, "resource %q needs a sha256 and a size", up.Name)
		}
		if up.Type != "file" {
			return false, api.Errorf(api.CodeInvalid, "resource %q has type %q: only file resources can be uploaded", up.Name, up.Type)
		}
		cur, err := t.ResourceByName(a.ModelUUID, a.Name, up.Name)
		if err != nil {
			return false, err
		}
		if cur != nil && cur.SHA256 == up.SHA256 && cur.Path == up.Path {
			continue
		}
		r := &api.Resource{ModelUUID: a.ModelUUID, Application: a.Name, Name: up.Name, Type: up.Type, Path: up.Path,
			Revision: 1, SHA256: up.SHA256, Size: up.Size, Origin: api.ResourceOriginUpload, Uploaded: now}
		if cur != nil {
			r.Revision, r.Meta = cur.Revision+1, cur.Meta
		}
		if err := t.put(tables.Resources, r); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}
