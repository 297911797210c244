package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const pathController = "/v1/controller"

// v1Path joins escaped segments under /v1.
func v1Path(segments ...string) string {
	var b strings.Builder
	b.WriteString("/v1")
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// modelPath is /v1/models/{model}/segments...
func modelPath(model string, segments ...string) string {
	return v1Path(append([]string{"models", model}, segments...)...)
}

// readOpts folds the optional ReadOptions of a read into one.
func readOpts(opts []ReadOptions) ReadOptions {
	var o ReadOptions
	for _, x := range opts {
		o.Index = max(o.Index, x.Index)
		o.Consistent = o.Consistent || x.Consistent
	}
	return o
}

func (c *Client) get(ctx context.Context, p string, q url.Values, opts []ReadOptions, out any) error {
	return c.call(ctx, &request{method: http.MethodGet, path: p, query: q, read: readOpts(opts)}, out)
}

// write sends a JSON body (nil for none) with method and decodes the answer.
func (c *Client) write(ctx context.Context, method, p string, q url.Values, in, out any) error {
	r, err := writeRequest(method, p, q, in)
	if err != nil {
		return err
	}
	return c.call(ctx, r, out)
}

// writeRequest is a request with a JSON body (nil for none).
func writeRequest(method, p string, q url.Values, in any) (*request, error) {
	r := &request{method: method, path: p, query: q}
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return nil, Errorf(CodeBadRequest, "api client: encode %s %s: %v", method, p, err)
		}
		r.body, r.contentType = data, "application/json"
	}
	return r, nil
}

func forceQuery(force bool) url.Values {
	if !force {
		return nil
	}
	return url.Values{"force": {"true"}}
}

// ControllerInfo describes the controller and its nodes. With
// FollowAddresses the client adopts the API addresses it lists.
func (c *Client) ControllerInfo(ctx context.Context, opts ...ReadOptions) (*ControllerInfo, error) {
	var out ControllerInfo
	if err := c.get(ctx, pathController, nil, opts, &out); err != nil {
		return nil, err
	}
	c.followInfo(&out)
	return &out, nil
}

// EnableHA grows the controller to nodes voting members (3, 5 or 7).
func (c *Client) EnableHA(ctx context.Context, nodes int) (*ControllerInfo, error) {
	var out ControllerInfo
	err := c.write(ctx, http.MethodPost, v1Path("controller", "enable-ha"), nil, EnableHARequest{Nodes: nodes}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateJoinToken returns a single-use token for `droverd spoke --join`;
// ttl 0 lets the controller choose (1 hour), and more than 24 hours is
// refused (ErrInvalid).
func (c *Client) CreateJoinToken(ctx context.Context, ttl time.Duration) (*JoinToken, error) {
	var out JoinToken
	err := c.write(ctx, http.MethodPost, v1Path("controller", "join-tokens"), nil, JoinTokenRequest{TTL: ttl}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// WhoAmI returns the authenticated identity.
func (c *Client) WhoAmI(ctx context.Context) (*WhoAmI, error) {
	var out WhoAmI
	if err := c.get(ctx, v1Path("whoami"), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UploadCharm uploads a charm zip archive. The archive is read into memory
// first so that the upload can move to another node if the first cannot be
// reached.
func (c *Client) UploadCharm(ctx context.Context, archive io.Reader) (*Charm, error) {
	data, err := io.ReadAll(archive)
	if err != nil {
		return nil, Errorf(CodeBadRequest, "api client: read charm archive: %v", err)
	}
	var out Charm
	r := &request{method: http.MethodPost, path: v1Path("charms"), body: data, contentType: "application/zip"}
	if err := c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Charm returns an uploaded charm's metadata.
func (c *Client) Charm(ctx context.Context, sha256 string, opts ...ReadOptions) (*Charm, error) {
	var out Charm
	if err := c.get(ctx, v1Path("charms", sha256), nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Charms lists uploaded charms.
func (c *Client) Charms(ctx context.Context, opts ...ReadOptions) ([]Charm, error) {
	var out []Charm
	return out, c.get(ctx, v1Path("charms"), nil, opts, &out)
}

// DownloadCharm streams a charm's zip archive; the caller closes it.
func (c *Client) DownloadCharm(ctx context.Context, sha256 string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, &request{method: http.MethodGet, path: v1Path("charms", sha256, "archive")})
	if err != nil {
		return nil, err
	}
	return bodyCloser{Reader: resp.Body, r: resp}, nil
}

// Models lists the models the caller can see.
func (c *Client) Models(ctx context.Context, opts ...ReadOptions) ([]Model, error) {
	var out modelList
	return out, c.get(ctx, v1Path("models"), nil, opts, &out)
}

// ModelsOf lists, at a hub, the models identity user (an email, a client id
// or an identity id) can read, of those the caller can read: the
// administrators of user's organization may ask.
func (c *Client) ModelsOf(ctx context.Context, user string) ([]Model, error) {
	var out modelList
	return out, c.get(ctx, v1Path("models"), url.Values{"user": {user}}, nil, &out)
}

// AddModel creates a model. A hub answers where it placed the model, and
// the index at which that controller created it: the client places the
// model there (PlaceModel), its controller's index raised to the
// creation's, so that its next reads find it.
func (c *Client) AddModel(ctx context.Context, req AddModelRequest) (*Model, error) {
	var out struct {
		Model
		ModelIndex
	}
	r, err := writeRequest(http.MethodPost, v1Path("models"), nil, req)
	if err != nil {
		return nil, err
	}
	if err := c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	if out.ControllerUUID != "" { // a hub's index entry: where it placed it
		out.Model.applyIndex(&out.ModelIndex)
		c.placeAt(out.UUID, out.ControllerUUID, r.answered)
	}
	return &out.Model, nil
}

// Call sends a JSON request to any route (nil in: no body; nil out:
// discard the answer). The hub's own routes (grants, groups, audit,
// controllers) are called through it.
func (c *Client) Call(ctx context.Context, method, path string, q url.Values, in, out any) error {
	if method == http.MethodGet {
		return c.get(ctx, path, q, nil, out)
	}
	return c.write(ctx, method, path, q, in, out)
}

// CreateHubToken returns a single-use token with which a hub registers this
// controller (`drover add-controller ... --join-token T` on the hub); ttl 0
// lets the controller choose (1 hour).
func (c *Client) CreateHubToken(ctx context.Context, ttl time.Duration) (*JoinToken, error) {
	var out JoinToken
	err := c.write(ctx, http.MethodPost, v1Path("controller", "hub-tokens"), nil, JoinTokenRequest{TTL: ttl}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// HubTrust returns the hub this controller trusts (ErrNotFound: none).
func (c *Client) HubTrust(ctx context.Context, opts ...ReadOptions) (*HubTrust, error) {
	var out HubTrust
	if err := c.get(ctx, v1Path("controller", "hub"), nil, opts, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetPlacement records the cloud and region a hub placed the controller
// in (a superuser's call: the hub makes it when it registers the
// controller); its status then names them.
func (c *Client) SetPlacement(ctx context.Context, p Placement) (*Placement, error) {
	var out Placement
	if err := c.write(ctx, http.MethodPut, v1Path("controller", "placement"), nil, p, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveHubTrust makes the controller trust no hub: tokens signed by the
// hub it trusted are refused from then on.
func (c *Client) RemoveHubTrust(ctx context.Context) error {
	return c.write(ctx, http.MethodDelete, v1Path("controller", "hub"), nil, nil, nil)
}
