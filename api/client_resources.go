package api

import (
	"context"
	"io"
	"net/http"
)

// UploadResource uploads a resource's content to the model's controller,
// which stores it by sha256; deploy and AttachResources then name it. The
// content is read into memory first, as a charm upload's is, so that the
// upload can move to another node.
func (m ModelClient) UploadResource(ctx context.Context, content io.Reader) (*ResourceContent, error) {
	data, err := io.ReadAll(content)
	if err != nil {
		return nil, Errorf(CodeBadRequest, "api client: read resource: %v", err)
	}
	var out ResourceContent
	r := &request{method: http.MethodPost, path: modelPath(m.uuid, "resource-blobs"), body: data, contentType: "application/octet-stream"}
	if err := m.c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AttachResources gives an application new content for some of its
// resources (juju attach-resource).
func (m ModelClient) AttachResources(ctx context.Context, app string, res map[string]ResourceContent) (*Application, error) {
	return m.appAction(ctx, app, "resources", AttachResourcesRequest{Resources: res})
}

// Resources lists an application's uploaded resources, by name.
func (m ModelClient) Resources(ctx context.Context, app string, opts ...ReadOptions) ([]Resource, error) {
	var out []Resource
	return out, m.c.get(ctx, modelPath(m.uuid, "applications", app, "resources"), nil, opts, &out)
}
