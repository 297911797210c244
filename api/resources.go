package api

import "time"

// ResourceOriginUpload is the origin of a resource uploaded by a user
// (juju's "upload" origin; there is no charm store to take one from).
const ResourceOriginUpload = "upload"

// Resource is one file resource of an application (metadata.yaml
// `resources:` of type file): the content the user uploaded, stored by
// sha256 on the controller. Revision counts the uploads for this name,
// from 1.
type Resource struct {
	ModelUUID   string    `json:"model-uuid"`
	Application string    `json:"application"`
	Name        string    `json:"name"`
	Type        string    `json:"type"`
	Path        string    `json:"path"` // the charm's filename for it
	Revision    int       `json:"revision"`
	SHA256      string    `json:"sha256"`
	Size        int64     `json:"size"`
	Origin      string    `json:"origin"`
	Uploaded    time.Time `json:"uploaded"`
	Meta
}

// ResourceContent names uploaded content: what POST
// /v1/models/{uuid}/resource-blobs answers, and what deploy and refresh
// take per resource name.
type ResourceContent struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// AttachResourcesRequest gives an application new content for some of its
// resources (juju attach-resource, refresh --resource). Each changed
// resource gets the next revision and the units run upgrade-charm.
type AttachResourcesRequest struct {
	Resources map[string]ResourceContent `json:"resources"`
}
