package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
	openfga "github.com/openfga/go-sdk"
	"github.com/openfga/go-sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
)

// Errors returned by Client, tested with errors.Is. The wrapped chain also
// holds the go-sdk error for the detail.
var (
	// ErrInvalidRequest: OpenFGA rejected the request (unknown type or
	// relation, malformed object, a userset not allowed by the model).
	ErrInvalidRequest = errors.New("authz: invalid request")
	// ErrNotFound: the store or model does not exist.
	ErrNotFound = errors.New("authz: not found")
	// ErrUnavailable: OpenFGA could not be reached or failed; retry later.
	ErrUnavailable = errors.New("authz: openfga unavailable")
)

// Client is a typed client of one OpenFGA store holding Drover's model.
// It is safe for concurrent use.
type Client struct {
	sdk       *client.OpenFgaClient
	http      *http.Client
	url       string
	storeID   string
	modelID   string
	pageLimit int32
}

// New connects to the OpenFGA HTTP API at url, finds the store named
// storeName (creating it if absent) and makes sure its latest authorization
// model is Drover's model, writing it only when it differs. Calling New
// again with the same arguments is cheap and changes nothing.
//
// If several stores carry the name (two hub replicas raced to create it),
// the oldest one wins, so every replica converges on the same store.
//
// Each request to OpenFGA is bounded by RequestTimeout (or
// WithRequestTimeout's): one that hangs fails as unavailable, where it
// used to hold its caller as long as OpenFGA did.
func New(ctx context.Context, url, storeName string, opts ...Option) (*Client, error) {
	if url == "" || storeName == "" {
		return nil, fmt.Errorf("%w: url and store name are required", ErrInvalidRequest)
	}
	o := options{timeout: RequestTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	url = strings.TrimRight(url, "/")
	hc := &http.Client{Timeout: o.timeout}
	sdk, err := client.NewSdkClient(&client.ClientConfiguration{ApiUrl: url, HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("authz: sdk client: %w", err)
	}
	c := &Client{sdk: sdk, http: hc, url: url, pageLimit: 100}
	if c.storeID, err = c.ensureStore(ctx, storeName); err != nil {
		return nil, err
	}
	if err := sdk.SetStoreId(c.storeID); err != nil {
		return nil, fmt.Errorf("authz: store id: %w", err)
	}
	if c.modelID, err = c.ensureModel(ctx); err != nil {
		return nil, err
	}
	if err := sdk.SetAuthorizationModelId(c.modelID); err != nil {
		return nil, fmt.Errorf("authz: model id: %w", err)
	}
	return c, nil
}

// RequestTimeout bounds each request to OpenFGA by default.
const RequestTimeout = 10 * time.Second

// Option configures New.
type Option func(*options)

type options struct {
	timeout time.Duration
}

// WithRequestTimeout replaces RequestTimeout; 0 keeps it.
func WithRequestTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// StoreID is the id of the store the client works on.
func (c *Client) StoreID() string { return c.storeID }

// ModelID is the id of the authorization model every request is pinned to.
func (c *Client) ModelID() string { return c.modelID }

func (c *Client) ensureStore(ctx context.Context, name string) (string, error) {
	find := func() (string, error) {
		var best *openfga.Store
		var token string
		for {
			opts := client.ClientListStoresOptions{PageSize: openfga.PtrInt32(c.pageLimit)}
			if token != "" {
				opts.ContinuationToken = &token
			}
			resp, err := c.sdk.ListStores(ctx).Options(opts).Execute()
			if err != nil {
				return "", classify(ctx, "list stores", err)
			}
			for i := range resp.Stores {
				s := &resp.Stores[i]
				if s.Name == name && (best == nil || older(s, best)) {
					best = s
				}
			}
			if token = resp.ContinuationToken; token == "" {
				break
			}
		}
		if best == nil {
			return "", nil
		}
		return best.Id, nil
	}
	id, err := find()
	if err != nil || id != "" {
		return id, err
	}
	if _, err := c.sdk.CreateStore(ctx).Body(client.ClientCreateStoreRequest{Name: name}).Execute(); err != nil {
		return "", classify(ctx, "create store", err)
	}
	// Look again rather than trusting our own create: a concurrent creator
	// may have won, and the oldest store is the one everyone uses.
	return find()
}

func older(a, b *openfga.Store) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.Id < b.Id
}

func (c *Client) ensureModel(ctx context.Context) (string, error) {
	want, err := ModelProto()
	if err != nil {
		return "", err
	}
	latest, err := c.sdk.ReadLatestAuthorizationModel(ctx).Execute()
	if err != nil {
		return "", classify(ctx, "read latest model", err)
	}
	if latest.AuthorizationModel != nil {
		raw, err := json.Marshal(latest.AuthorizationModel)
		if err != nil {
			return "", fmt.Errorf("authz: encode latest model: %w", err)
		}
		var have openfgav1.AuthorizationModel
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, &have); err != nil {
			return "", fmt.Errorf("authz: decode latest model: %w", err)
		}
		if sameModel(&have, want) {
			return have.GetId(), nil
		}
	}
	js, err := ModelJSON()
	if err != nil {
		return "", err
	}
	var body client.ClientWriteAuthorizationModelRequest
	if err := json.Unmarshal(js, &body); err != nil {
		return "", fmt.Errorf("authz: model for sdk: %w", err)
	}
	resp, err := c.sdk.WriteAuthorizationModel(ctx).Body(body).Execute()
	if err != nil {
		return "", classify(ctx, "write model", err)
	}
	return resp.AuthorizationModelId, nil
}

// Check reports whether user has relation on object.
func (c *Client) Check(ctx context.Context, user string, relation Relation, object string) (bool, error) {
	resp, err := c.sdk.Check(ctx).Body(client.ClientCheckRequest{
		User: user, Relation: string(relation), Object: object,
	}).Execute()
	if err != nil {
		return false, classify(ctx, "check", err)
	}
	return resp.GetAllowed(), nil
}

// ListObjects returns, sorted, the objects of type typ ("model", ...) on
// which user has relation, as "type:id" strings. OpenFGA caps the answer
// (1000 objects by default, see embedded.Config.ListObjectsMaxResults).
func (c *Client) ListObjects(ctx context.Context, user string, relation Relation, typ string) ([]string, error) {
	resp, err := c.sdk.ListObjects(ctx).Body(client.ClientListObjectsRequest{
		User: user, Relation: string(relation), Type: typ,
	}).Execute()
	if err != nil {
		return nil, classify(ctx, "list objects", err)
	}
	objs := slices.Clone(resp.GetObjects())
	slices.Sort(objs)
	return objs, nil
}

// classify wraps an sdk or transport error with one of the package's
// sentinel errors.
func classify(ctx context.Context, op string, err error) error {
	var (
		validation openfga.FgaApiValidationError
		notFound   openfga.FgaApiNotFoundError
	)
	switch {
	case errors.As(err, &validation):
		return fmt.Errorf("authz: %s: %w: %w", op, ErrInvalidRequest, err)
	case errors.As(err, &notFound):
		return fmt.Errorf("authz: %s: %w: %w", op, ErrNotFound, err)
	case ctx.Err() != nil:
		// The caller's own end (gone, or out of time): not OpenFGA's
		// failure. A request that ran out of RequestTimeout is.
		return fmt.Errorf("authz: %s: %w", op, err)
	default:
		return fmt.Errorf("authz: %s: %w: %w", op, ErrUnavailable, err)
	}
}
